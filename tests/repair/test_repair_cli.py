"""``fairaudit repair`` from the command line, a chain's ``[repair]`` table and
``fairaudit.repair(...)`` (issue 39): every input row and column written unchanged plus the new
column, whose balance — computed independently from the written file — meets the target, with
moves at the LP bound plus at most one per (cell, segment); the input never modified; the
report and JSON beside the table, all or nothing; an infeasible target exits 2 naming the
group; an already fair segmentation comes back unchanged."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from fairaudit.metrics import counting

SMALL = ("--bootstrap", "20")


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def independent_balance(frame: pl.DataFrame, attribute: str, labels: str,
                        min_cell: int = 10) -> float:
    """balance of ``labels`` for ``attribute`` from a fresh group-by and counting.balance."""
    t = (frame.group_by([attribute, labels]).len()
         .pivot(on=labels, index=attribute, values="len").fill_null(0))
    N = t.drop(attribute).to_numpy().astype(float)
    N = N[N.sum(axis=1) >= min_cell]
    return float(counting.balance(N[:, N.sum(axis=0) > 0]).min)


@pytest.fixture
def unfair(tmp_path: Path, synthetic: pl.DataFrame) -> Path:
    path = tmp_path / "customers.parquet"
    synthetic.write_parquet(path)
    return path


def test_cli_writes_every_row_and_a_fair_column(run_cli, unfair, tmp_path, synthetic):
    before = _sha(unfair)
    r = run_cli("repair", unfair, "--sensitive", "sex,race", "--labels", "segment",
                "--target", "balance=0.8", "--out", "fair.parquet", *SMALL)
    assert r.exit_code == 0, r.output
    assert _sha(unfair) == before  # the input is only ever read
    out = pl.read_parquet(tmp_path / "fair.parquet")
    assert out.columns == [*synthetic.columns, "segment_fair"]
    assert out.drop("segment_fair").equals(synthetic)
    assert out["segment_fair"].dtype == synthetic["segment"].dtype
    for a in ("sex", "race"):
        assert independent_balance(synthetic, a, "segment") < 0.8 or a == "race"
        assert independent_balance(out, a, "segment_fair") >= 0.8
    doc = json.loads((tmp_path / "fair.json").read_text())
    changed = int((out["segment"] != out["segment_fair"]).sum())
    s = doc["solution"]
    assert s["moves"] == changed > 0
    assert s["lp_bound"] - 1e-6 <= changed <= s["lp_bound"] + s["rounding_allowance"]
    assert {t["attribute"] for t in doc["targets"]} == {"sex", "race"}
    assert all(t["met_after"] for t in doc["targets"])
    assert doc["after"]["status"] == "pass" and doc["before"]["status"] == "fail"
    html = (tmp_path / "fair.html").read_text()
    assert "Repairing changes what the segments mean" in html
    assert "people change segment" in r.output and "LP bound" in r.output


def test_csv_keeps_every_cell_as_written(run_cli, tmp_path):
    rng = np.random.default_rng(2)
    n = 600
    seg = rng.choice(["gold", "silver", "bronze"], n)
    sex = np.where((seg == "gold") & (rng.random(n) < 0.7), "F", rng.choice(["F", "M"], n))
    lines = ["id,code,sex,note,tier"] + [
        f"{i:05d},00{i % 7},{s},{'NA' if i % 5 == 0 else 'x,y' if i % 7 == 0 else 'ok'},{t}"
        for i, (s, t) in enumerate(zip(sex, seg, strict=True))]
    lines = [line.replace("x,y", '"x,y"') for line in lines]
    src = tmp_path / "tiers.csv"
    src.write_text("\n".join(lines) + "\n")
    r = run_cli("repair", src, "-s", "sex", "--labels", "tier", "--target", "balance=0.9",
                "--out", "tiers_fair.csv", "--as", "tier_new", *SMALL)
    assert r.exit_code == 0, r.output
    a = pl.read_csv(src, infer_schema=False)
    b = pl.read_csv(tmp_path / "tiers_fair.csv", infer_schema=False)
    assert b.drop("tier_new").equals(a)  # "00123" stays "00123", "NA" stays "NA"
    assert set(b["tier_new"].unique()) <= set(a["tier"].unique())
    assert independent_balance(b, "sex", "tier_new") >= 0.9


def test_infeasible_exits_2_naming_the_group_and_writes_nothing(run_cli, tmp_path):
    rng = np.random.default_rng(0)
    n = 400
    df = pl.DataFrame({"g": np.r_[np.full(n - 4, "a"), np.full(4, "tiny")],
                       "seg": rng.integers(0, 6, n)})
    df.write_parquet(tmp_path / "d.parquet")
    r = run_cli("repair", "d.parquet", "-s", "g", "--labels", "seg", "--target",
                "balance=0.5", "--min-cell", "1", "--out", "o.parquet", *SMALL)
    assert r.exit_code == 2
    assert "'tiny'" in r.output and "4 people" in r.output and "6 segments" in r.output
    assert not any(tmp_path.glob("o.*"))


def test_already_fair_is_returned_unchanged(run_cli, tmp_path):
    n = 900
    df = pl.DataFrame({"sex": np.tile(["F", "M", "M"], n // 3),
                       "seg": np.repeat([0, 1, 2], n // 3)})
    df.write_parquet(tmp_path / "fair.parquet")
    r = run_cli("repair", "fair.parquet", "-s", "sex", "--labels", "seg", "--target",
                "balance=0.9", "--out", "same.parquet", *SMALL)
    assert r.exit_code == 0, r.output
    out = pl.read_parquet(tmp_path / "same.parquet")
    assert out["seg_fair"].equals(out["seg"].alias("seg_fair"))
    doc = json.loads((tmp_path / "same.json").read_text())
    assert doc["solution"]["moves"] == 0 and doc["status"] == "unchanged"


def test_intersection_is_held_and_the_seed_chooses_the_people(run_cli, unfair, tmp_path):
    args = ("repair", unfair, "-s", "sex,race", "--labels", "segment", "--target",
            "balance=0.7", "--intersection", *SMALL)
    for out, seed in (("a.parquet", "1"), ("b.parquet", "1"), ("c.parquet", "2")):
        r = run_cli(*args, "--out", out, "--seed", seed)
        assert r.exit_code == 0, r.output
    a, b, c = (pl.read_parquet(tmp_path / f"{x}.parquet") for x in "abc")
    joint = a.with_columns(pl.concat_str(["sex", "race"], separator="|").alias("sex_race"))
    assert independent_balance(joint, "sex_race", "segment") < 0.7
    assert independent_balance(joint, "sex_race", "segment_fair") >= 0.7
    for attr in ("sex", "race"):
        assert independent_balance(a, attr, "segment_fair") >= 0.7
    doc = json.loads((tmp_path / "a.json").read_text())
    assert {t["attribute"] for t in doc["targets"]} == {"sex", "race", "sex|race"}
    assert a["segment_fair"].equals(b["segment_fair"])  # the same seed, the same people
    assert not a["segment_fair"].equals(c["segment_fair"])
    assert int((a["segment"] != a["segment_fair"]).sum()) == doc["solution"]["moves"] == int(
        (c["segment"] != c["segment_fair"]).sum())


def test_a_chain_nested_too_deeply_exits_2(run_cli, tmp_path):
    (tmp_path / "deep.toml").write_text("[repair]\ntarget = " + "[" * 60 + "]" * 60 + "\n")
    for command in ("run", "validate"):
        r = run_cli(command, "deep.toml")
        assert r.exit_code == 2 and "nested" in r.output, (command, r.output)


def test_bad_requests_exit_2_before_any_work(run_cli, unfair, tmp_path):
    base = ("repair", unfair, "-s", "sex,race", "--labels", "segment")
    cases = [
        (("--target", "ed_max=0.1", "--out", "o.parquet"), "second-order cone"),
        (("--target", "balance@ci=0.8", "--out", "o.parquet"), "without @ci"),
        (("--target", "balance=0.8", "--out", str(unfair)), "only ever read"),
        (("--target", "balance=0.8", "--out", "o.csv"), "input's format"),
        (("--target", "balance=0.8", "--out", "o.parquet", "--as", "sex"), "--as sex"),
        (("--target", "balance=0.8", "--out", "o.parquet", "--objective", "cost"),
         "needs --features"),
        (("--target", "balance[age]=0.8", "--out", "o.parquet"), "'age' is not a sensitive"),
        (("--target", "balance=0.8", "--out", "o.parquet", "--keep-sizes", "1.5"),
         "--keep-sizes"),
    ]
    for extra, words in cases:
        r = run_cli(*base, *extra)
        assert r.exit_code == 2, (extra, r.output)
        assert words in r.output, (extra, r.output)
    assert not any(tmp_path.glob("o.*"))


def test_chain_repair_table_runs_through_fairaudit_run(run_cli, unfair, tmp_path):
    (tmp_path / "chain.toml").write_text(f"""
[data]
path = "{unfair.as_posix()}"
sensitive = ["sex", "race"]
labels = "segment"
[options]
bootstrap = 20
[repair]
target = {{balance = 0.8, "balance[sex]" = 0.85}}
keep_sizes = 0.3
out = "chain_fair.parquet"
""")
    r = run_cli("run", "chain.toml")
    assert r.exit_code == 0, r.output
    doc = json.loads((tmp_path / "chain_fair.json").read_text())
    assert {(t["attribute"], t["target"]) for t in doc["targets"]} == {("sex", 0.85),
                                                                       ("race", 0.8)}
    out = pl.read_parquet(tmp_path / "chain_fair.parquet")
    assert independent_balance(out, "sex", "segment_fair") >= 0.85
    size0 = out["segment"].value_counts().sort("segment")["count"].cast(pl.Int64).to_numpy()
    size1 = (out["segment_fair"].value_counts().sort("segment_fair")["count"]
             .cast(pl.Int64).to_numpy())
    assert (np.abs(size1 - size0) <= 0.3 * size0).all()
    (tmp_path / "bad.toml").write_text('[repair]\ntarget = {balance = 0.8}\nkeep_size = 0.1\n')
    r = run_cli("run", "bad.toml")
    assert r.exit_code == 2 and "did you mean keep_sizes?" in r.output
    assert run_cli("validate", "chain.toml").exit_code == 0
    (tmp_path / "bad2.toml").write_text('[data]\nsensitive = ["sex"]\nlabels = "segment"\n'
                                        '[repair]\ntarget = {ed = 0.1}\nout = "x.parquet"\n')
    r = run_cli("validate", "bad2.toml")
    assert r.exit_code == 2 and "repair.target['ed']" in r.output


def test_api_returns_a_typed_result_and_writes_on_request(tmp_path, synthetic):
    import fairaudit
    from fairaudit.repair.result import RepairResult

    res = fairaudit.repair(synthetic, sensitive=["sex", "race"], labels="segment",
                           target={"balance": 0.8}, features=["x1", "x2"], bootstrap=20)
    assert isinstance(res, RepairResult)
    assert res.table.height == synthetic.height and res.moves > 0
    assert res.lp_bound <= res.moves and res.cost is not None and res.cost > 0
    assert independent_balance(res.table, "sex", res.column) >= 0.8
    o, r, j = res.write(tmp_path / "api.csv")
    assert o.exists() and r.exists() and j.exists()
    assert pl.read_csv(o).height == synthetic.height
    assert callable(fairaudit.repair) and fairaudit.repair.spec.RepairSpec
    with pytest.raises(fairaudit.errors.ConfigError, match="target"):
        fairaudit.repair(synthetic, sensitive="sex", labels="segment", target={})


def test_cost_objective_adds_no_more_distance_than_the_fewest_moves(tmp_path, synthetic):
    import fairaudit

    kw = {"sensitive": ["sex"], "labels": "segment", "target": {"balance": 0.9},
          "features": ["x1", "x2"], "bootstrap": 0}
    moves = fairaudit.repair(synthetic, **kw)
    cost = fairaudit.repair(synthetic, objective="cost", **kw)
    assert cost.cost <= moves.cost + 1e-9
    assert cost.doc["solution"]["lp_bound"] <= cost.cost + 1e-9
    assert cost.moves >= moves.moves  # the fewest moves is the fewest
    assert independent_balance(cost.table, "sex", cost.column) >= 0.9


def test_a_failed_render_writes_nothing(tmp_path, synthetic, monkeypatch):
    import fairaudit
    import fairaudit.repair.render as render

    def boom(doc):
        raise RuntimeError("render failed")

    monkeypatch.setattr(render, "render_repair_html", boom)
    with pytest.raises(RuntimeError):
        fairaudit.repair(synthetic, sensitive="sex", labels="segment",
                         target={"balance": 0.8}, bootstrap=0, out=tmp_path / "x.parquet")
    assert list(tmp_path.iterdir()) == []
