"""Attacks on the privacy accounting around ``--publish`` (issue 34): each test is one way a
careless or automated pipeline obtained more than one budget's worth of releases about the same
people, or saw an exact count on the side. docs/privacy.md ("The privacy unit and the data
source", "The ledger") states what these tests prove.

Every published run here uses a ledger under ``tmp_path``; ``XDG_STATE_HOME`` points into
``tmp_path`` too, so no test touches the user's own ledger.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import numpy as np
import polars as pl
import pytest

import fairaudit
from fairaudit.errors import ConfigError

BOOT = "20"  # replicates: the intervals are not under test here; the accounting is


@pytest.fixture(autouse=True)
def _state_home(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))


def people(n: int = 1500, seed: int = 34) -> pl.DataFrame:
    """race (4 groups, one of 40 people) x sex x decile: 80 intersection cells, many of them
    small (the cells an averaging attacker wants), an identifier and a feature."""
    rng = np.random.default_rng(seed)
    race = rng.choice(["Asian", "Black", "White", "Other"], size=n, p=[0.2, 0.25, 0.55 - 40 / n,
                                                                          40 / n])
    sex = rng.choice(["F", "M"], size=n)
    decile = rng.integers(1, 11, size=n)
    return pl.DataFrame({"person_id": 1_000_000 + rng.choice(9_000_000, size=n, replace=False),
                         "race": race, "sex": sex, "decile": decile,
                         "income": np.round(rng.lognormal(10, 1, size=n), 2)})


def published(run_cli, data, ledger, *extra, sensitive="race,sex", labels="decile"):
    """One published run (a new report file each time); returns (exit code, output, the JSON
    document or None)."""
    out = ledger.parent / f"r{len(list(ledger.parent.glob('r*.html')))}.html"
    res = run_cli("audit", data, "-s", sensitive, "--labels", labels, "--publish", "--bootstrap",
                  BOOT, "--ledger", ledger, "--new-ledger", "-o", out, *extra)
    written = res.exit_code in (0, 1) and out.with_suffix(".json").exists()  # 1: a gate failed
    doc = json.loads(out.with_suffix(".json").read_text()) if written else None
    return res.exit_code, " ".join(res.output.split()), doc


def cells(doc) -> dict[tuple[str, int], int]:
    """The released race|sex x decile cells of a published document."""
    (lab,) = doc["labellings"]
    comp = lab["composition"]["race|sex"]
    return {(g, int(c)): int(n) for g, row in zip(comp["groups"], comp["counts"], strict=True)
            for c, n in zip(comp["clusters"], row, strict=True)}


def exact_cells(df: pl.DataFrame) -> dict[tuple[str, int], int]:
    g = df.group_by("race", "sex", "decile").len()
    return {(f"{r}|{s}", d): n for r, s, d, n in g.iter_rows()}


def recovered(docs, truth) -> int:
    """The averaging attack: the mean of every release's cells, rounded; how many equal the
    truth."""
    released = [cells(d) for d in docs]
    keys = sorted(truth)
    avg = np.mean([[r.get(k, 0) for k in keys] for r in released], axis=0)
    return int(sum(round(a) == truth[k] for a, k in zip(avg, keys, strict=True)))


# ---------------------------------------------------------------------------- 1. copies
def _copies(df: pl.DataFrame, tmp: Path) -> list[tuple[str, object, str]]:
    """Trivially changed copies of one table: (name, input, its sensitive columns)."""
    (tmp / "data").mkdir()
    (tmp / "elsewhere").mkdir()
    base = tmp / "data" / "people.parquet"
    df.write_parquet(base)
    shuffled = tmp / "data" / "shuffled.parquet"
    df.sample(fraction=1.0, shuffle=True, seed=1).write_parquet(shuffled)
    csv = tmp / "data" / "people.csv"
    df.write_csv(csv)
    crlf = tmp / "data" / "people_crlf_quoted.csv"
    crlf.write_bytes(df.write_csv(quote_style="always").replace("\n", "\r\n").encode())
    renamed = tmp / "data" / "renamed.parquet"
    df.rename({"race": "Race"}).write_parquet(renamed)
    extra = tmp / "data" / "extra.parquet"
    df.with_columns(pl.lit("x").alias("note ")).rename({"income": "income "}).write_parquet(extra)
    other = tmp / "elsewhere" / "people.parquet"
    df.write_parquet(other)
    return [
        ("original", base, "race,sex"),
        ("again", base, "race,sex"),
        ("shuffled", shuffled, "race,sex"),
        ("csv", csv, "race,sex"),
        ("crlf, every cell quoted", crlf, "race,sex"),
        ("renamed column", renamed, "Race,sex"),
        ("extra column, space in an unused name", extra, "race,sex"),
        ("another path", other, "race,sex"),
        ("./ and .. in the path", f"{tmp}/elsewhere/./../data/./people.parquet", "race,sex"),
    ]


@pytest.mark.parametrize("naming", ["default", "fresh name per copy", "one name"])
def test_averaging_trivially_changed_copies_recovers_no_more_than_one_release(
        tmp_path, run_cli, naming):
    """Issue 34, item 1: 30 shuffled copies each published with budget 1 were all granted, and
    their average gave 101 of 120 cells exactly (one release: 70). Now every copy, whatever its
    order, format, encoding, column names, extra columns, path or source name, either gets the
    stored release back (byte-identical) or is refused: the attacker has one release."""
    df = people()
    ledger = tmp_path / "ledger.json"
    docs, codes = [], []
    for i, (name, data, sensitive) in enumerate(_copies(df, tmp_path)):
        source = {"default": [], "one name": ["--privacy-source", "people"],
                  "fresh name per copy": ["--privacy-source", f"people-copy-{i}"]}[naming]
        code, out, doc = published(run_cli, data, ledger, "--epsilon", "1", "--privacy-budget",
                                   "1", *source, sensitive=sensitive)
        assert code in (0, 2), (name, out)
        assert "internal error" not in out
        codes.append((name, code))
        if doc is not None:
            docs.append(doc)
    lf_run = None
    if naming != "default":  # a LazyFrame through the API (it must name its source)
        try:
            lf_run = fairaudit.audit(
                df.lazy().sort("income"), sensitive=["race", "sex"], labels="decile",
                publish=True, epsilon=1.0, privacy_budget=1.0, ledger=str(ledger),
                privacy_source="people" if naming == "one name" else "people-lazy",
                bootstrap=int(BOOT))
        except ConfigError as exc:
            assert str(ledger) in str(exc)
        if lf_run is not None:
            docs.append(lf_run.to_json())
    releases = {d["input"]["fingerprint"] for d in docs}
    assert len(releases) == 1, codes
    truth = exact_cells(df)
    assert recovered(docs, truth) == recovered(docs[:1], truth)
    book = json.loads(ledger.read_text())
    assert sum(len(s["releases"]) for s in book["sources"].values()) == 1
    assert sum(r["epsilon"] for s in book["sources"].values() for r in s["releases"]) == \
        pytest.approx(1.0)


def test_a_lazyframe_needs_a_named_source(tmp_path):
    with pytest.raises(ConfigError, match="privacy_source"):
        fairaudit.audit(people().lazy(), sensitive=["race"], labels="decile", publish=True,
                        privacy_budget=1.0, ledger=str(tmp_path / "l.json"), new_ledger=True)


# ---------------------------------------------------------------------------- 2. nightly
def _nights(root: Path, layout: str, nights: int = 4) -> list[Path]:
    """The same customers every night, one fewer each night (and one changed segment)."""
    df = people(seed=5)
    paths = []
    for night in range(nights):
        day = f"2026-12-{night + 1:02d}"
        folder = root / (f"date={day}" if layout == "hive" else day)
        folder.mkdir(parents=True)
        part = df.slice(night, None).with_columns(
            pl.when(pl.col("person_id") == df["person_id"][-1]).then(night % 10 + 1)
            .otherwise(pl.col("decile")).alias("decile"))
        part.write_parquet(folder / "part-0.parquet")
        paths.append(folder / "part-0.parquet")
    return paths


def test_nightly_hive_partitions_share_one_budget(tmp_path, run_cli):
    """Issue 34, item 2: each night's partition (a new path) got a fresh budget. The default
    source of a partitioned dataset is its root (hive key=value folders and the part's file name
    stripped): four nights at epsilon 1 against a budget of 2 make two releases."""
    ledger = tmp_path / "ledger.json"
    codes = []
    for path in _nights(tmp_path / "segments", "hive"):
        code, out, _ = published(run_cli, path, ledger, "--epsilon", "1", "--privacy-budget", "2")
        codes.append(code)
        if code == 2:
            assert "budget" in out and str(tmp_path / "segments") in out
    assert codes == [0, 0, 2, 2]
    book = json.loads(ledger.read_text())
    assert list(book["sources"]) == [str((tmp_path / "segments").resolve())]


def test_nightly_dated_folders_without_keys_must_name_their_source(tmp_path, run_cli):
    """Dated folders without hive keys are different datasets to a path: the second night's
    default source would be new to a ledger that already accounts for another, so it is refused
    with the sources it could be — never a fresh budget by default."""
    ledger = tmp_path / "ledger.json"
    first, second, *_ = _nights(tmp_path / "exports", "dated")
    assert published(run_cli, first, ledger, "--privacy-budget", "2")[0] == 0
    code, out, _ = published(run_cli, second, ledger, "--privacy-budget", "2")
    assert code == 2
    assert "--privacy-source" in out and str(first.parent.resolve()) in out
    code, _, doc = published(run_cli, second, ledger, "--privacy-source",
                             str(first.parent.resolve()))
    assert code == 0 and doc["privacy"]["spent"] == pytest.approx(2.0)


def test_a_templated_source_name_per_night_is_recognised_by_its_identifiers(tmp_path, run_cli):
    """A pipeline that names each night's source after its date ("customers-2026-12-02") names
    a new population every night. The ledger's sketch of each release's near-unique columns
    (here person_id) recognises the same people under the new name and refuses it."""
    ledger = tmp_path / "ledger.json"
    nights = _nights(tmp_path / "exports", "dated", nights=2)
    code, _, _ = published(run_cli, nights[0], ledger, "--privacy-budget", "2",
                           "--privacy-source", "customers-2026-12-01")
    assert code == 0
    code, out, _ = published(run_cli, nights[1], ledger, "--privacy-budget", "2",
                             "--privacy-source", "customers-2026-12-02")
    assert code == 2
    assert "'customers-2026-12-01'" in out and "person_id" in out


# ---------------------------------------------------------------------------- 3. the budget
def test_the_recorded_budget_holds_without_the_flag_and_is_raised_only_by_the_command(
        tmp_path, run_cli):
    """Issue 34, item 3: after --epsilon 1 --privacy-budget 1, a run with --epsilon 0.5 and no
    budget flag published (1.5 spent), and --privacy-budget 100 raised the limit silently."""
    ledger = tmp_path / "ledger.json"
    a, b, c = (tmp_path / f"{x}.parquet" for x in "abc")
    for i, p in enumerate((a, b, c)):
        people(seed=40 + i).write_parquet(p)
    src = ["--privacy-source", "customers"]
    assert published(run_cli, a, ledger, "--epsilon", "1", "--privacy-budget", "1", *src)[0] == 0
    code, out, _ = published(run_cli, b, ledger, "--epsilon", "0.5", *src)
    assert code == 2 and "budget 1" in out and "0 left" in out
    code, out, _ = published(run_cli, b, ledger, "--epsilon", "0.5", "--privacy-budget", "100",
                             *src)
    assert code == 2 and "fairaudit ledger raise" in out
    res = run_cli("ledger", "raise", "customers", "--to", "2", "--ledger", ledger)
    assert res.exit_code == 2 and "--reason" in res.output  # a raise says why
    res = run_cli("ledger", "raise", "customers", "--to", "2", "--reason", "Q4 sign-off",
                  "--ledger", ledger)
    assert res.exit_code == 0, res.output
    code, _, doc = published(run_cli, b, ledger, "--epsilon", "0.5", *src)
    assert code == 0 and doc["privacy"]["spent"] == pytest.approx(1.5)
    res = run_cli("ledger", "lower", "customers", "--to", "1.6", "--ledger", ledger)
    assert res.exit_code == 0, res.output
    code, out, _ = published(run_cli, c, ledger, "--epsilon", "0.5", *src)
    assert code == 2 and "budget 1.6" in out
    history = json.loads(ledger.read_text())["sources"]["customers"]["budget_history"]
    assert [h["to"] for h in history] == [1.0, 2.0, 1.6]
    assert history[1]["reason"] == "Q4 sign-off" and history[1]["from"] == 1.0
    shown = run_cli("ledger", "show", "--ledger", ledger)
    assert shown.exit_code == 0
    text = " ".join(shown.output.split())
    assert "customers" in text and "1.5" in text and "1.6" in text and "Q4 sign-off" in text


def test_a_first_release_needs_a_budget(tmp_path, run_cli):
    people().write_parquet(tmp_path / "p.parquet")
    code, out, _ = published(run_cli, tmp_path / "p.parquet", tmp_path / "l.json")
    assert code == 2 and "--privacy-budget" in out
    assert not (tmp_path / "l.json").exists()


# ---------------------------------------------------------------------------- 4. questions
CHANGES = [
    ("other labels", {"labels": "band"}, []),
    ("fewer sensitive", {"sensitive": "sex"}, []),
    ("another attribute", {"sensitive": "race,sex,region"}, []),
    ("min-cell", {}, ["--min-cell", "5"]),
    ("seed", {}, ["--seed", "7"]),
    ("bootstrap", {}, ["--bootstrap", "25"]),
    ("epsilon", {}, ["--epsilon", "0.5"]),
    ("declared groups", {}, ["--dp-categories", "sex=F,M"]),
    ("a threshold", {}, ["--fail-under", "balance=0.5"]),
    ("private domain", {}, ["--dp-domain", "private"]),
]


def test_another_question_of_the_same_data_is_a_new_charged_release(tmp_path, run_cli):
    """Issue 34, item 4: another labels column, other sensitive columns, one more attribute or
    other options returned the first question's stored release at no cost (the options hash
    left out the chain's data section)."""
    rng = np.random.default_rng(2)
    df = people().with_columns(band=pl.Series(rng.integers(0, 3, 1500)),
                               region=pl.Series(rng.choice(["N", "S"], 1500)))
    data = tmp_path / "p.parquet"
    df.write_parquet(data)
    ledger = tmp_path / "ledger.json"
    code, _, first = published(run_cli, data, ledger, "--privacy-budget", "20", "--epsilon", "1")
    assert code == 0
    spent = 1.0
    for name, roles, flags in CHANGES:
        code, out, doc = published(run_cli, data, ledger, *flags, **roles)
        assert code in (0, 1), (name, out)  # 1: the threshold's gate may fail
        assert "at no cost" not in out, name
        spent += doc["privacy"]["epsilon"]
        assert doc["privacy"]["spent"] == pytest.approx(spent), name
        assert doc["input"]["fingerprint"] != first["input"]["fingerprint"], name
    code, out, again = published(run_cli, data, ledger)
    assert code == 0 and "at no cost" in out
    assert again == first


# ---------------------------------------------------------------------------- 5. the ledger
@pytest.fixture(scope="module")
def good_ledger(tmp_path_factory) -> tuple[bytes, Path]:
    """The bytes of a real one-release ledger, and a table that is not yet in it."""
    tmp = tmp_path_factory.mktemp("ledger")
    people().write_parquet(tmp / "p.parquet")
    people(seed=8).write_parquet(tmp / "q.parquet")
    fairaudit.audit(str(tmp / "p.parquet"), sensitive=["race"], labels="decile", publish=True,
                    privacy_budget=3.0, ledger=str(tmp / "l.json"), new_ledger=True,
                    privacy_source="people", bootstrap=int(BOOT))
    return (tmp / "l.json").read_bytes(), tmp / "q.parquet"


def _edit(raw: bytes, fn) -> bytes:
    data = json.loads(raw)
    fn(data)
    return json.dumps(data).encode()


def _release(d):
    return d["sources"]["people"]["releases"][0]


BAD_LEDGERS = [
    ("0 bytes", lambda raw: b"", "empty"),
    ("not json", lambda raw: raw[:40], "not JSON"),
    ("negative epsilon", lambda raw: _edit(raw, lambda d: _release(d).update(epsilon=-5)),
     "releases[0].epsilon"),
    ("nan epsilon", lambda raw: raw.replace(b'"epsilon": 1.0', b'"epsilon": NaN'),
     "releases[0].epsilon"),
    ("nan budget", lambda raw: _edit(raw, lambda d: d["sources"]["people"].update(budget=1))
     .replace(b'"budget": 1', b'"budget": NaN'), "sources['people'].budget"),
    ("negative budget", lambda raw: _edit(raw, lambda d: d["sources"]["people"].update(
        budget=-1.0)), "sources['people'].budget"),
    ("unknown top-level field", lambda raw: _edit(raw, lambda d: d.update(extra=1)), "'extra'"),
    ("unknown release field", lambda raw: _edit(raw, lambda d: _release(d).update(eps=1)),
     "'eps'"),
    ("missing release field", lambda raw: _edit(raw, lambda d: _release(d).pop("epsilon")),
     "releases[0]: missing 'epsilon'"),
    ("missing budget", lambda raw: _edit(raw, lambda d: d["sources"]["people"].pop("budget")),
     "sources['people']: missing 'budget'"),
    ("wrong version", lambda raw: _edit(raw, lambda d: d.update(version=99)), "version"),
    ("version as text", lambda raw: _edit(raw, lambda d: d.update(version="2")), "version"),
    ("duplicate source", lambda raw: raw.replace(b'"sources": {', b'"sources": {"people": {}, ', 1),
     "'people' twice"),
    ("a list", lambda raw: b"[]", "a JSON object"),
]


@pytest.mark.parametrize(("what", "mutate", "named"), BAD_LEDGERS, ids=[b[0] for b in BAD_LEDGERS])
def test_a_bad_ledger_exits_2_naming_the_file_and_field_and_is_left_untouched(
        tmp_path, run_cli, good_ledger, what, mutate, named):
    """Issue 34, item 5: a 0-byte ledger was read as empty (a fresh budget), epsilon -5 granted
    budget, NaN disabled the check for good."""
    raw, other = good_ledger
    ledger = tmp_path / "l.json"
    ledger.write_bytes(mutate(raw))
    before = ledger.read_bytes()
    res = run_cli("audit", other, "-s", "race", "--labels", "decile", "--publish", "--ledger",
                  ledger, "--privacy-source", "people", "-q", "--bootstrap", BOOT)
    out = " ".join(res.output.split())
    assert res.exit_code == 2, (what, out)
    assert str(ledger) in out and named in out, (what, out)
    assert ledger.read_bytes() == before
    assert not (tmp_path / "fairaudit-report.html").exists()
    shown = run_cli("ledger", "show", "--ledger", ledger)
    assert shown.exit_code == 2 and str(ledger) in shown.output


def test_a_typo_in_the_ledger_path_exits_2_and_creates_nothing(tmp_path, run_cli, good_ledger):
    raw, other = good_ledger
    (tmp_path / "ledger.json").write_bytes(raw)
    res = run_cli("audit", other, "-s", "race", "--labels", "decile", "--publish", "--ledger",
                  tmp_path / "ledger.jsn", "--privacy-source", "people", "-q")
    assert res.exit_code == 2
    out = " ".join(res.output.split())
    assert str(tmp_path / "ledger.jsn") in out and "--new-ledger" in out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ledger.json"]


def test_a_symlinked_ledger_is_one_ledger(tmp_path, run_cli, good_ledger):
    """Through a symlink the atomic replace turned the link into a file: real.json and
    alias.json kept two budgets. Now the link is resolved before locking and replacing."""
    raw, other = good_ledger
    real = tmp_path / "real.json"
    real.write_bytes(raw)
    alias = tmp_path / "alias.json"
    alias.symlink_to(real)
    base = ["-s", "race", "--labels", "decile", "--publish", "--privacy-source", "people", "-q",
            "--bootstrap", BOOT, "--epsilon", "1.5"]
    assert run_cli("audit", other, *base, "--ledger", alias).exit_code == 0
    assert alias.is_symlink()
    third = tmp_path / "r.parquet"
    people(seed=77).write_parquet(third)
    res = run_cli("audit", third, *base, "--ledger", real)
    assert res.exit_code == 2 and "budget 3" in " ".join(res.output.split())
    assert len(json.loads(real.read_text())["sources"]["people"]["releases"]) == 2


@pytest.mark.parametrize("kind", ["dangling", "loop", "directory"])
def test_a_ledger_link_to_nothing_usable_exits_2(tmp_path, run_cli, good_ledger, kind):
    _, other = good_ledger
    alias = tmp_path / "alias.json"
    if kind == "dangling":
        alias.symlink_to(tmp_path / "gone.json")
    elif kind == "loop":
        (tmp_path / "b.json").symlink_to(alias)
        alias.symlink_to(tmp_path / "b.json")
    else:
        (tmp_path / "dir").mkdir()
        alias.symlink_to(tmp_path / "dir")
    res = run_cli("audit", other, "-s", "race", "--labels", "decile", "--publish", "--ledger",
                  alias, "--new-ledger", "--privacy-source", "people", "--privacy-budget", "1",
                  "-q")
    assert res.exit_code == 2, res.output
    assert str(alias) in " ".join(res.output.split())
    assert not (tmp_path / "gone.json").exists()


# ---------------------------------------------------------------------------- 6. paths
def test_the_same_file_by_another_spelling_is_the_same_release(tmp_path, run_cli):
    """Issue 34, item 6: data/x.csv and ./data/./x.csv were two releases."""
    (tmp_path / "data").mkdir()
    people().write_csv(tmp_path / "data" / "x.csv")
    ledger = tmp_path / "ledger.json"
    code, _, first = published(run_cli, "data/x.csv", ledger, "--privacy-budget", "1")
    assert code == 0
    for spelling in ("./data/./x.csv", "data/../data/x.csv", str(tmp_path / "data" / "x.csv")):
        code, out, doc = published(run_cli, spelling, ledger)
        assert code == 0 and "at no cost" in out, spelling
        assert doc == first
    (src,) = json.loads(ledger.read_text())["sources"].values()
    assert len(src["releases"]) == 1


# ---------------------------------------------------------------------------- 7. epsilon
@pytest.mark.parametrize(("flags", "named"), [
    (["--epsilon", "10.5"], "--allow-large-epsilon"),
    (["--epsilon", "1e9"], "--epsilon"),
    (["--epsilon", "1e308", "--allow-large-epsilon"], "--epsilon"),
    (["--epsilon", "1e-300"], "--epsilon"),
    (["--epsilon", "1e-5"], "--epsilon"),
    (["--dp-domain", "private", "--delta", "1e-300"], "--delta"),
    (["--dp-domain", "private", "--delta", "1e-16"], "--delta"),
])
def test_epsilon_and_delta_out_of_range_exit_2_never_3(tmp_path, run_cli, flags, named):
    """Issue 34, item 7: epsilon 1e9 was published as a shareable DP release with every cell
    exact; epsilon and delta 1e-300 ended in an internal error."""
    people().write_parquet(tmp_path / "p.parquet")
    code, out, _ = published(run_cli, tmp_path / "p.parquet", tmp_path / "l.json",
                             "--privacy-budget", "1e12", *flags)
    assert code == 2, out
    assert named in out and "internal error" not in out
    assert not (tmp_path / "l.json").exists()


def test_large_epsilon_needs_the_flag_in_chain_and_api_too(tmp_path, run_cli):
    people().write_parquet(tmp_path / "p.parquet")
    (tmp_path / "c.toml").write_text(
        '[data]\nsensitive = ["race"]\nlabels = "decile"\n'
        '[privacy]\npublish = true\nepsilon = 50.0\nbudget = 100.0\n')
    res = run_cli("run", "c.toml", tmp_path / "p.parquet")
    assert res.exit_code == 2 and "privacy.epsilon" in res.output
    with pytest.raises(ConfigError, match="epsilon="):
        fairaudit.audit(str(tmp_path / "p.parquet"), sensitive=["race"], labels="decile",
                        publish=True, epsilon=1e308, privacy_budget=1e309 / 1e300)
    run = fairaudit.audit(str(tmp_path / "p.parquet"), sensitive=["race"], labels="decile",
                          publish=True, epsilon=20.0, privacy_budget=20.0,
                          allow_large_epsilon=True, bootstrap=int(BOOT))
    assert any("above 10" in n for n in run.doc["notes"])


# ---------------------------------------------------------------------------- 8. console
def _numbers(text: str) -> set[int]:
    return {int(m.replace(",", "")) for m in re.findall(r"(?<![\w.])\d[\d,]*(?![\d.]*\w)", text)}


@pytest.mark.parametrize("verbosity", [[], ["-v"], ["--debug"]])
def test_a_published_run_prints_no_exact_count(tmp_path, run_cli, monkeypatch, verbosity):
    """Issue 34, item 8: the progress line "read rows: 7,214 rows" (and the input checks' small
    group warnings, exclusion notes) quoted exact counts on the console of a published run."""
    from fairaudit.privacy import dp

    df = people(n=2371, seed=11)
    df = df.with_columns(pl.when(pl.int_range(pl.len()) < 37).then(None)
                         .otherwise(pl.col("sex")).alias("sex"))
    data = tmp_path / "p.csv"
    df.write_csv(data)
    # noise that moves every released cell: an exact count can then only come from the side
    monkeypatch.setattr(dp, "add_noise", lambda mech, counts: np.asarray(counts) + 3)
    monkeypatch.setenv("FAIRAUDIT_PROGRESS_INTERVAL", "0")
    res = run_cli("audit", data, "-s", "race,sex", "--labels", "decile", "--publish",
                  "--bootstrap", BOOT, "--ledger", tmp_path / "l.json", "--new-ledger",
                  "--privacy-budget", "1", *verbosity)
    assert res.exit_code == 0, res.output
    exact = fairaudit.audit(str(data), sensitive=["race", "sex"], labels="decile",
                            bootstrap=0).doc
    counts = {2371, 37, 2371 - 37, *(r["n"] for a in exact["input"]["groups"].values()
                                     for r in a),
              *(c["n"] for lab in exact["labellings"] for c in lab["cluster_sizes"])}
    counts = {c for c in counts if c >= 10}  # small numbers are everywhere (epsilon 1, 95 %)
    published_doc = (tmp_path / "fairaudit-report.json").read_text()
    allowed = _numbers(published_doc)
    console = res.output.replace(str(tmp_path), "TMP")  # pytest's folders have numbers,
    console = re.sub(r"\[\d\d:\d\d:\d\d\]", "[TIME]", console)  # progress lines a clock
    leaked = (_numbers(console) & counts) - allowed
    assert not leaked, (sorted(leaked), res.output[-3000:])
    assert os.path.exists(tmp_path / "fairaudit-report.html")


def test_redaction_masks_records_progress_warnings_and_errors(caplog):
    """The pieces of item 8 one by one: a log record's numbers (not those inside names, not a
    traceback's line numbers), a progress record's counts, a warning, an error and its cause."""
    import logging
    import warnings

    from fairaudit.core.progress import Meter
    from fairaudit.privacy.redact import mask, no_exact_counts

    assert mask("read rows: 7,214 rows; 'Other' (n=7); race_2020; 0.5 s; line 12") == \
        "read rows: # rows; 'Other' (n=#); race_2020; # s; line 12"
    caplog.set_level(logging.INFO)
    shown: list[str] = []
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.showwarning = lambda message, *a, **k: shown.append(str(message))
        with no_exact_counts():
            logging.getLogger("fairaudit.test").warning("%d of %d rows", 37, 2371)
            with Meter("read rows", 2371, "rows") as meter:
                meter.update(2371)
            warnings.warn("dropped 37 rows", UserWarning, stacklevel=1)
    logging.getLogger("fairaudit.test").warning("%d rows after the block", 2371)
    messages = [r.getMessage() for r in caplog.records]
    assert "# of # rows" in messages and "2371 rows after the block" in messages
    progress = [r.progress for r in caplog.records if getattr(r, "progress", None)]
    assert progress and all(p["done"] == 0 and p["total"] is None for p in progress)
    assert progress[-1].get("closed")
    assert shown == ["dropped # rows"]
    with pytest.raises(KeyError) as err:
        with no_exact_counts():
            try:
                raise ValueError("7,214 rows")
            except ValueError as exc:
                raise KeyError("group of 12") from exc
    assert err.value.args == ("group of #",) and err.value.__cause__.args == ("# rows",)
