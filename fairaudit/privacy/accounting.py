"""The ledger-guarded published run (docs/privacy.md, "The privacy unit and the data source",
"The ledger"): which data source a release spends from, what makes two releases the same, and
the budget that holds whether or not the flag is repeated.

* **The source** is the population whose budget a release spends: named by the data owner
  (``--privacy-source``, ``[privacy] source``, ``privacy_source=``), or by default the input's
  *dataset*: its real folder (a file's folder, a folder, a glob's fixed part) with the hive
  partition folders (``date=2026-12-01``) stripped — so the nightly parts of one dataset share a
  budget. A default source new to a ledger that already accounts for other sources is refused
  (it would start a fresh budget by default); an in-memory table has no path and must be named.
* **The same people under another name**: a release whose audited rows are recorded under
  another source (equal content fingerprint), or whose identifiers mostly are (the sketch of
  :mod:`fairaudit.privacy.fingerprint`), or whose counts are within the noise of such a
  release (:mod:`fairaudit.privacy.nearcopy`), is refused naming that source.
* **The same release**: the same audited rows (any order, format, path) and the same question
  (every option that changes the release: the roles, the chain's steps and options, the
  thresholds, the seed, epsilon, the domain) return the stored release at no cost; anything else
  is a new release, charged.
* **The budget** is the source's, recorded in the ledger by its first release and changed only
  by ``fairaudit ledger raise`` / ``lower``; ``--privacy-budget`` sets it for a new source and
  otherwise can only hold a run to less.
"""

from __future__ import annotations

import copy
import logging
import os
import re
from pathlib import Path
from typing import Any

from fairaudit.errors import ConfigError, InputError

log = logging.getLogger(__name__)

IN_MEMORY = "<in-memory table>"
OPTIONS_SCHEME = 2
OVERLAP = 0.5
"""Share of a near-unique column's values found in another source's release above which the
two are taken for the same people."""
_HIVE = re.compile(r"[^=/\\]+=[^/\\]*")
_NAME_IT = "--privacy-source NAME, [privacy] source, privacy_source="


def dataset_root(path: str) -> str:
    """The default source of an input path: its real folder, hive partition folders stripped.

    ``segments/date=2026-12-01/part-0.parquet`` and ``./segments/`` are both ``/abs/segments``;
    a URL (``s3://bucket/segments/date=.../x.parquet``) is treated the same way on its text."""
    text = _local(os.path.expanduser(str(path)))
    if "://" in text:
        scheme, rest = _without_secrets(text, keep_user=False).split("://", 1)
        parts = [p for p in rest.split("/") if p]
        while parts and any(ch in parts[-1] for ch in "*?["):
            parts.pop()
        if len(parts) > 1 and "." in parts[-1]:
            parts.pop()
        while len(parts) > 1 and _HIVE.fullmatch(parts[-1]):
            parts.pop()
        return f"{scheme}://" + "/".join(parts)
    parts = Path(text).parts
    fixed = []
    for part in parts:
        if any(ch in part for ch in "*?["):
            break
        fixed.append(part)
    globbed = len(fixed) < len(parts)
    real = Path(os.path.realpath(Path(*fixed) if fixed else Path(".")))
    if not globbed and not real.is_dir():
        real = real.parent
    while _HIVE.fullmatch(real.name) and real.parent != real:
        real = real.parent
    return str(real)


def _local(text: str) -> str:
    """``file:///abs/x.parquet`` is the local path ``/abs/x.parquet`` (the same people)."""
    if text[:8].lower() == "file:///":
        from urllib.parse import unquote

        return unquote(text[7:])
    return text


def _without_secrets(url: str, *, keep_user: bool) -> str:
    """``url`` without its password, query and fragment (and without its user unless
    ``keep_user``): ``postgresql://me:secret@db/crm?sslkey=k`` -> ``postgresql://db/crm``. A
    ledger never holds a credential, and the people of ``db/crm`` are the same whoever logs in."""
    scheme, rest = url.split("://", 1)
    rest = re.split(r"[?#]", rest, maxsplit=1)[0]
    host, slash, tail = rest.partition("/")
    if "@" in host:
        user, _, host = host.rpartition("@")
        if keep_user:
            host = f"{user.split(':', 1)[0]}@{host}"
    return f"{scheme}://{host}{slash}{tail}"


def input_name(path: Any) -> str | None:
    """What a release records as its input: the real path (or the URL without its password and
    query, a glob); None in memory."""
    if not isinstance(path, str):
        return None
    text = _local(os.path.expanduser(path))
    return _without_secrets(text, keep_user=True) if "://" in text else os.path.realpath(text)


def source_of(privacy: Any, path: Any) -> tuple[str, bool]:
    """``(the ledger's key, whether it was named)``."""
    if privacy.source is not None:
        return privacy.source, True
    if not isinstance(path, str):
        raise ConfigError(
            "privacy source: an in-memory table has no path to name the people it holds; name "
            f"its data source ({_NAME_IT}): the budget belongs to those people, wherever the "
            "table comes from")
    return dataset_root(path), False


def audited_columns(spec: Any, roles: Any) -> list[str]:
    """The columns a release is computed from, in role order: the sensitive columns, the labels
    column, and the features when a clusterer is fitted."""
    cols = [*roles.sensitive, *([roles.labels] if roles.labels else [])]
    if spec.cluster:
        cols += [c for c in roles.features if c not in cols]
    return cols


def question(spec: Any, roles: Any) -> dict[str, Any]:
    """Everything that changes a release besides the audited rows (its hash is the ledger's
    ``options``): the columns in each role (their names are published), the chain's steps,
    options and thresholds, the seed, and the privacy parameters. Not the input's path or
    format, the reader options (the rows already reflect them), the budget or the ledger."""
    from fairaudit import __version__

    d, p = spec.data, spec.privacy
    chain = spec.to_json()
    chain.pop("source", None)
    clustered = bool(spec.cluster)
    return {
        "scheme": OPTIONS_SCHEME,
        "fairaudit": __version__,
        "data": {"sensitive": list(roles.sensitive), "labels": roles.labels,
                 "features": list(roles.features) if clustered else None,
                 "exclude": list(d.exclude) if clustered else None,
                 "ordinal": {k: list(v) for k, v in sorted(d.ordinal.items())},
                 "seed": d.seed, "sample": d.sample, "on_null": d.on_null,
                 "on_nonfinite": d.on_nonfinite,
                 "allow_sensitive_features": d.allow_sensitive_features},
        "chain": chain,
        "privacy": {"epsilon": p.epsilon, "domain": p.domain,
                    "delta": p.delta if p.domain == "private" else None,
                    "categories": {k: list(v) for k, v in sorted(p.categories.items())},
                    "clusters": None if p.clusters is None else list(p.clusters),
                    "fitted": p.fitted if clustered else None},
    }


def options_hash(options: Any) -> str:
    import hashlib
    import json

    text = json.dumps(options, sort_keys=True, default=str, allow_nan=False)
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


# ---------------------------------------------------------------------------- checks
def check_default_source(book: Any, key: str) -> None:
    """A default source new to a ledger that accounts for others would start a fresh budget
    by default (a dated folder, a copy elsewhere): the owner must name it."""
    others = [k for k in book.keys() if k != key]
    if book.source(key) is not None or not others:
        return
    shown = ", ".join(repr(k) for k in others[:5]) + (" …" if len(others) > 5 else "")
    raise ConfigError(
        f"privacy source: ledger {book.given} already accounts for {shown}; this input's "
        f"default source would be {key!r} (its folder), new to the ledger. A new source starts "
        "a fresh budget, so it is never started by default: if these are the people of one of "
        f"those sources, publish under it (--privacy-source {others[0]!r}); if they are other "
        f"people, name their source ({_NAME_IT})")


def same_people(book: Any, key: str, fp: Any, cube: Any = None) -> str | None:
    """Why this data looks like a release recorded under another source (None if not):
    the same audited rows, most of the same identifiers (the sketch), or ``cube()`` — the
    data's exact intersection x labels counts, computed only when needed — within the noise
    of what such a release published (:mod:`fairaudit.privacy.nearcopy`)."""
    from fairaudit.privacy.fingerprint import ColumnSketch, overlap

    others = [(k, r) for k in book.keys() if k != key for r in book.releases(k)]
    for other, r in others:
        if r["fingerprint"] == fp.content:
            return _same(book, key, other, r, "the same audited rows")
    for other, r in others:
        for b in r["sketch"]:
            theirs = ColumnSketch.from_json(b)
            for mine in fp.sketch:
                share = overlap(mine, theirs)
                if share is not None and share >= OVERLAP:
                    return _same(book, key, other, r,
                                 f"most values of its column {mine.column!r} are in column "
                                 f"{theirs.column!r} of that release")
    if cube is None or not others:
        return None
    from fairaudit.privacy import nearcopy

    n_attributes, exact = cube
    counts = None
    for other, r in others:
        released = nearcopy.released_cube(r["document"], n_attributes)
        if released is None:
            continue
        counts = exact() if counts is None else counts
        if nearcopy.within_noise(counts, *released):
            return _same(book, key, other, r, "its counts per group and cluster are within "
                         "the noise of that release's")
    return None


def _same(book: Any, key: str, other: str, r: Any, why: str) -> str:
    return (f"privacy source: ledger {book.given}: this data looks like the people of the "
            f"release of {r['created']} under source {other!r} ({why}); publishing it as "
            f"{key!r} would start a fresh budget for the same people — publish it under "
            f"{other!r} (--privacy-source {other!r}, [privacy] source, privacy_source=), or, if "
            "they are really other people, keep their accounting in another ledger (--ledger)")


def budget_of(book: Any, key: str, given: float | None) -> float:
    """The budget this release is held to: the recorded one (``given`` may only lower it for
    this run), or ``given`` for a source without one. Refused when there is neither."""
    recorded = book.budget(key)
    if recorded is None:
        if given is None:
            raise ConfigError(
                f"privacy budget: source {key!r} has no budget in ledger {book.given}; its "
                "first release sets it: add --privacy-budget EPS ([privacy] budget, "
                "privacy_budget=), the total epsilon its people may lose over every release")
        return given
    if given is not None and given > recorded:
        log.warning("--privacy-budget %.6g does not raise the budget %.6g recorded for source "
                    "%r (ledger %s): the recorded budget holds; raise it with `fairaudit ledger "
                    "raise %r --to %.6g --reason TEXT`", given, recorded, key, book.given, key,
                    given)
    return recorded if given is None else min(given, recorded)


def check_budget(book: Any, key: str, epsilon: float, budget: float,
                 delta: float = 0.0) -> None:
    """Refuse a release that would pass the source's epsilon budget, or bring the deltas of its
    releases (they add up too) above :data:`~fairaudit.core.spec.DELTA_MAX`, the most one
    release may use: every source's releases together stay (budget, 1e-3)-DP at worst."""
    from fairaudit.core.spec import DELTA_MAX

    spent_delta = book.spent_delta(key)
    if spent_delta + delta > DELTA_MAX * (1 + 1e-12):
        raise ConfigError(
            f"privacy budget: ledger {book.given}: source {key!r} has spent delta "
            f"{spent_delta:.3g} in private-domain releases; this release needs {delta:.3g}, "
            f"which would bring its total above {DELTA_MAX:g} (the most fairaudit lets one "
            "source lose: the deltas of its releases add up) — lower --delta, or declare the "
            "groups (--dp-categories) and publish with the public domain (delta 0)")
    spent = book.spent(key)
    if spent + epsilon > budget * (1 + 1e-12):
        left = max(budget - spent, 0.0)
        raise ConfigError(
            f"privacy budget: ledger {book.given}: source {key!r} has spent epsilon "
            f"{spent:.6g} of its budget {budget:.6g} ({left:.6g} left); this release needs "
            f"{epsilon:.6g} — lower --epsilon, publish no more of this source, or raise its "
            f"budget: `fairaudit ledger raise {key!r} --to EPS --reason TEXT`")


# ---------------------------------------------------------------------------- the run
def fingerprint(lf: Any, columns: list[str]) -> Any:
    """The data's fingerprint and sketch, with progress (numbers masked in a published run)."""
    from fairaudit.core.progress import Meter
    from fairaudit.privacy.fingerprint import fingerprint_frame

    with Meter("fingerprint rows", None, "rows") as meter:
        try:
            return fingerprint_frame(lf, columns, meter=meter)
        except ValueError as exc:
            raise InputError(f"--publish: {exc}") from None


def run_published(spec: Any, path: Any, lf: Any, roles: Any, compute: Any) -> Any:
    """Run ``compute`` (the published run) under the ledger's lock: the stored release of the
    same data and question is returned at no cost; otherwise the source, the people and the
    budget are checked before anything is computed, and the new release is recorded with what
    it spent."""
    from fairaudit.privacy import ledger, redact
    from fairaudit.report.results import AuditRun

    privacy = spec.privacy
    key, named = source_of(privacy, path)
    options = options_hash(question(spec, roles))
    columns = audited_columns(spec, roles)
    with ledger.open_ledger(privacy.ledger, create=privacy.new_ledger) as book:
        if not named:
            check_default_source(book, key)
        with redact.no_exact_counts():
            fp = fingerprint(lf, columns)
        conflict = same_people(book, key, fp, _cube(spec, roles, lf))
        if conflict:
            raise ConfigError(conflict)
        stored = book.find(key, fp.content, options)
        if stored is not None:
            log.warning("unchanged data and options: the stored release of source %r is returned; "
                        "no privacy budget spent (ledger %s)", key, book.given)
            return AuditRun(copy.deepcopy(stored["document"]),
                            ledger_now=_ledger_now(book, key, stored["created"]))
        budget = budget_of(book, key, privacy.budget)
        check_budget(book, key, privacy.epsilon, budget,
                     privacy.delta if privacy.domain == "private" else 0.0)
        with redact.no_exact_counts():
            run = compute()
        _note_large_epsilon(run.doc, privacy.epsilon)
        block = run.doc["privacy"]
        block["spent"] = book.spent(key) + float(block["epsilon"])
        block["spent_delta"] = book.spent_delta(key) + float(block["delta"])
        block["budget"] = budget
        block["ledger"] = {"path": str(book.given), "source": key,
                           "releases": len(book.releases(key)) + 1}
        if book.budget(key) is None:
            book.set_budget(key, budget, how="set by the source's first release")
        book.add_release(key, {
            "created": ledger.now(), "input": input_name(path), "fingerprint": fp.content,
            "options": options, "epsilon": float(block["epsilon"]),
            "delta": float(block["delta"]), "sketch": fp.sketch_json(),
            "document": run.to_json()})
        book.write()
        return AuditRun(run.doc, ledger_now=_ledger_now(book, key, None))


def _cube(spec: Any, roles: Any, lf: Any) -> tuple[int, Any] | None:
    """``(number of sensitive attributes, a function giving the exact intersection x labels
    counts)`` for the near-copy check of a labels audit; None for a fitted clustering."""
    if spec.cluster or not roles.labels or not roles.sensitive:
        return None
    from fairaudit.privacy.nearcopy import exact_cube

    return len(roles.sensitive), lambda: exact_cube(lf, roles.sensitive, roles.labels)


def _note_large_epsilon(doc: dict[str, Any], epsilon: float) -> None:
    from fairaudit.core.spec import EPSILON_CEILING

    if epsilon > EPSILON_CEILING:
        note = (f"epsilon {epsilon:g} is above {EPSILON_CEILING:g}, fairaudit's ceiling per "
                "release (accepted with --allow-large-epsilon): this release protects next to "
                "nothing, nearly every count in it is exact")
        log.warning("%s", note)
        doc.setdefault("notes", []).append(note)


def _ledger_now(book: Any, key: str, stored: str | None) -> dict[str, Any]:
    """The ledger's current totals of ``key`` (what the console states after a run)."""
    return {"path": str(book.given), "source": key, "spent": book.spent(key),
            "spent_delta": book.spent_delta(key), "releases": len(book.releases(key)),
            "budget": book.budget(key), "stored": stored}
