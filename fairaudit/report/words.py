"""Words where people read: plurals of the names users give their columns, and the names of
clusters (a labels column of strings keeps its own names: ``labellings[i].cluster_names``).

Used by the sentences (:mod:`fairaudit.report.explain_text`), the answer-first summary
(:mod:`fairaudit.report.answer`), the console and the report's charts, so that every place says
``"premium"`` where the data says premium, and ``classes`` where the column is ``class``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["article", "cluster_label", "cluster_labels", "plural", "quoted"]

_IRREGULAR = {
    "person": "people", "child": "children", "man": "men", "woman": "women",
    "criterion": "criteria", "datum": "data", "index": "indices", "matrix": "matrices",
    "analysis": "analyses", "basis": "bases", "crisis": "crises", "diagnosis": "diagnoses",
    "thesis": "theses", "axis": "axes", "foot": "feet", "tooth": "teeth", "mouse": "mice",
}
_UNCHANGED = {"series", "species", "data", "people", "staff", "sheep", "news", "info",
              "information", "equipment"}
_O_ES = {"hero", "potato", "tomato", "echo", "veto"}
_F_VES = {"leaf": "leaves", "life": "lives", "wife": "wives", "knife": "knives",
          "half": "halves", "shelf": "shelves", "wolf": "wolves", "calf": "calves"}


def _already_plural(low: str) -> bool:
    """``checks``, ``looks``, ``races``, ``years``: a word that is a plural already (an s after a
    consonant, or ``-es``), not ``status``, ``class``, ``bus``, ``gas``, ``analysis``."""
    if low.endswith(("ss", "us", "is", "os")) or len(low) < 3:
        return False
    return low.endswith("es") or (low.endswith("s") and low[-2] not in "aeiouy")


def _plural_word(word: str) -> str:
    low = word.lower()
    if not low.isalpha():  # "k3", "v2": a code, not a word
        return word + "s"
    if low in _UNCHANGED or low.endswith("ies") and low[:-3] + "y" != low:
        return word
    if low not in _IRREGULAR and _already_plural(low):
        return word
    for table in (_IRREGULAR, _F_VES):
        if low in table:
            out = _match_case(word, table[low])
            return out[0].upper() + out[1:] if word[0].isupper() else out
    if low.endswith(("s", "x", "z", "ch", "sh")):
        return word + _match_case(word[-1], "es")
    if low.endswith("y") and len(low) > 1 and low[-2] not in "aeiou":
        return word[:-1] + _match_case(word[-1], "ies")
    if low in _O_ES:
        return word + _match_case(word[-1], "es")
    return word + _match_case(word[-1], "s")


def _match_case(model: str, suffix: str) -> str:
    """``suffix`` in upper case when the word it ends is written in capitals."""
    return suffix.upper() if model.isupper() else suffix


def plural(word: str, n: int | None = None) -> str:
    """The English plural of ``word`` (class -> classes, status -> statuses, salary -> salaries,
    jobclass -> jobclasses, person -> people, cluster -> clusters). In a compound name
    (``job_class``, ``JobClass``, ``income band``) the last word takes the plural. With ``n``
    given, the singular is kept when n == 1."""
    if n == 1 or not word:
        return word
    parts = re.split(r"([\s_\-./]+)", word)
    last = parts[-1]
    if not last:
        return word
    # camelCase / PascalCase: the last capitalised piece (JobClass -> Job + Class)
    m = re.match(r"^(.*[a-z0-9])([A-Z][a-z]+)$", last)
    if m:
        parts[-1] = m.group(1) + _plural_word(m.group(2))
    else:
        parts[-1] = _plural_word(last)
    return "".join(parts)


def quoted(name: Any) -> str:
    """A name the data gives (a group, a cluster) as sentences show it: in quotes, so that
    ``the 93 “1” people`` is not read as a number."""
    return f"\u201c{name}\u201d"


def article(word: str) -> str:
    """``a`` or ``an`` before ``word`` (by its first letter; "an occupation", "a unit",
    "an hour" aside: "a" before "eu"/"uni"/"use", "an" before a silent h of hour/honest)."""
    low = word.lstrip("\u201c\"'").lower()
    if low.startswith(("hour", "honest", "honor", "honour", "heir")):
        return "an"
    if low.startswith(("uni", "use", "usu", "eu", "one", "once", "ubiq")):
        return "a"
    return "an" if low[:1] in "aeiou" and low[:1] != "" else "a"


def cluster_labels(lab: Mapping[str, Any] | None) -> Sequence[str] | None:
    """The clusters' own names of a labelling (a labels column of strings), indexed by cluster
    id, or None when the clusters have only ids."""
    names = (lab or {}).get("cluster_names")
    return [str(n) for n in names] if isinstance(names, Sequence) and names else None


def cluster_label(lab: Mapping[str, Any] | None, cluster: Any, *, unit: str = "cluster",
                  quote: bool = True, with_id: bool = False) -> str:
    """How people read cluster ``cluster`` of labelling ``lab``: its own name (``"premium"``,
    quoted in sentences) when the labels column names its clusters, else ``unit id``
    (``cluster 3``, ``segment 3``). ``with_id`` adds the id beside a name (``"premium" (3)``)."""
    names = cluster_labels(lab)
    if names is not None and isinstance(cluster, int) and not isinstance(cluster, bool) and (
            0 <= cluster < len(names)):
        name = quoted(names[cluster]) if quote else names[cluster]
        return f"{name} ({cluster})" if with_id else name
    if cluster == -1:
        return "noise"
    return f"{unit} {cluster}"


# ---------------------------------------------------------------------------- numbers in words
_REL = 1e-9
"""Relative tolerance of :func:`_close` (a value equal to a cell's, up to rounding)."""


def _int(x: float | int) -> str:
    return f"{int(round(x)):,}"


def _about(x: float) -> str:
    """An expected count: one decimal below 100, whole numbers above."""
    return f"{x:,.1f}" if x < 100 else _int(x)


def value_text(x: float | None) -> str:
    if x is None:
        return "undefined"
    return f"{0.0 if abs(x) < 5e-13 else x:.3f}"


def _step(x: float) -> str:
    """A small change, never shown as 0.000: three decimals, or two significant digits below
    0.001 (one person in a cluster of 4,000 moves a share by 0.00025)."""
    return f"{x:.3f}" if x >= 0.001 or x == 0 else f"{x:.2g}"


def capitalize(s: str) -> str:
    return s[:1].upper() + s[1:]




def _close(a: float, b: float) -> bool:
    return abs(a - b) <= _REL * max(1.0, abs(a), abs(b))


def join_clauses(parts: Sequence[Any]) -> str:
    """Notes (each possibly a sentence with its full stop) as one run of clauses: ``"a; b"``,
    never ``"a.; b"``; empty parts are dropped."""
    return "; ".join(p for p in (str(x).strip().rstrip(".").strip() for x in parts) if p)


def param_value(v: Any) -> str:
    """One parameter's value as a person reads it: ``yes`` / ``no``, ``0.01``, ``1e-06``,
    ``auto``; lists and tables as compact JSON."""
    import json

    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return f"{v:.4g}"
    if isinstance(v, int | str):
        return str(v)
    return json.dumps(v, sort_keys=True, ensure_ascii=False, default=str)


def param_text(params: Mapping[str, Any] | None, skip: Sequence[str] = ()) -> str:
    """A component's parameters as a person reads them, by name: ``fair: yes, n_init = 10``
    (switches as ``name: yes/no``, the others as ``name = value``); unset (``None``) ones and
    those in ``skip`` are left out."""
    parts = []
    for k, v in sorted((params or {}).items()):
        if v is None or k in skip:
            continue
        parts.append(f"{k}: {param_value(v)}" if isinstance(v, bool) else
                     f"{k} = {param_value(v)}")
    return ", ".join(parts)
