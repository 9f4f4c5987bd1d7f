"""The quality_parity auditor end to end: CLI, chain and API; values equal scikit-learn's
silhouette_samples (and the distance to the cluster mean) averaged per group, computed here from
the table alone; noise rows left out; a stated sample above max_rows; gates."""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest

import fairaudit


def _table(n: int = 500, seed: int = 5, noise: int = 0) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    seg = rng.integers(0, 3, n)
    sex = np.where(rng.random(n) < np.where(seg == 0, 0.7, 0.3), "F", "M")
    race = rng.choice(["a", "b"], n, p=[0.6, 0.4])
    spread = np.where(sex == "F", 1.6, 1.0)[:, None]  # F rows lie farther from their centres
    X = np.array([[0, 0], [4, 4], [-4, 4]])[seg] + rng.normal(size=(n, 2)) * spread
    seg = seg.copy()
    seg[:noise] = -1
    return pl.DataFrame({"x1": X[:, 0], "x2": X[:, 1], "sex": sex, "race": race,
                         "segment": seg})


def _reference(df: pl.DataFrame) -> dict[tuple[str, str], float]:
    """What the auditor must report, from the table alone: features standardised on every row
    (the default `encode` step), then noise rows dropped, sklearn's per-row silhouette, distances to the means."""
    from sklearn.metrics import silhouette_samples

    X = df.select("x1", "x2").to_numpy()
    Z = ((X - X.mean(axis=0)) / X.std(axis=0))[df["segment"].to_numpy() >= 0]
    keep = df.filter(pl.col("segment") >= 0)
    lab = keep["segment"].to_numpy()
    s = silhouette_samples(Z, lab)
    means = np.stack([Z[lab == c].mean(axis=0) for c in range(lab.max() + 1)])
    d = np.sqrt(((Z - means[lab]) ** 2).sum(axis=1))
    out = {}
    attrs = {"sex": keep["sex"].to_numpy(), "race": keep["race"].to_numpy(),
             "sex|race": (keep["sex"] + "|" + keep["race"]).to_numpy()}
    for attr, g in attrs.items():
        sm = [s[g == v].mean() for v in np.unique(g)]
        dm = [d[g == v].mean() for v in np.unique(g)]
        out[("silhouette_gap", attr)] = max(sm) - min(sm)
        out[("cost_ratio", attr)] = max(dm) / min(dm)
    return out


def _results(doc) -> dict[tuple[str, str], dict]:
    return {(r["metric"], r["attribute"]): r for r in doc["results"]
            if r["auditor"] == "quality_parity"}


def test_api_matches_sklearn_per_group_with_noise_left_out():
    df = _table(noise=25)
    run = fairaudit.audit(df, sensitive=["sex", "race"], labels="segment",
                          audit=["quality_parity"])
    got = _results(run.doc)
    ref = _reference(df)
    assert set(got) == set(ref)  # each attribute and the intersection, both metrics
    for key, want in ref.items():
        r = got[key]
        assert r["value"] == pytest.approx(want, rel=1e-9), key
        lo, hi = r["ci"]
        assert lo <= r["value"] <= hi
        assert r["n_rows"] == 475
        assert any("25 noise rows" in n for n in r["notes"])
    sex_cost = got[("cost_ratio", "sex")]
    assert sex_cost["detail"]["worst_group"] == "F"
    assert sex_cost["notes"][0].startswith("Worse served: 'F' of 'sex' — mean distance to the own centre")
    f, m = (g["mean"] for g in sorted(sex_cost["detail"]["groups"], key=lambda g: g["group"]))
    assert f"{f:.3f}, against {m:.3f} for 'M'" in sex_cost["notes"][0]
    assert sex_cost["detail"]["centres"] == "cluster means"


def test_cli_gate_and_sample(tmp_path, cli):
    from fairaudit.cli import main

    path = tmp_path / "t.parquet"
    _table().write_parquet(path)
    out = tmp_path / "r.html"
    args = ["audit", str(path), "--sensitive", "sex", "--labels", "segment",
            "--audit", "quality_parity:max_rows=200", "--out", str(out), "-q"]
    res = cli.invoke(main, [*args, "--fail-over", "cost_ratio=1.05"])
    assert res.exit_code == 1, res.output  # F rows are 1.6x as spread: the gate fails
    doc = json.loads(out.with_suffix(".json").read_text())
    sil = _results(doc)[("silhouette_gap", "sex")]
    assert sil["detail"]["exact"] is False and sil["detail"]["rows_used"] == 200
    assert any("seeded sample of 200 of 500" in n for n in sil["notes"])
    res = cli.invoke(main, [*args, "--fail-over", "cost_ratio=3"])
    assert res.exit_code == 0, res.output


def test_chain(tmp_path):
    path = tmp_path / "t.parquet"
    _table().write_parquet(path)
    chain = tmp_path / "chain.toml"
    chain.write_text(
        '[data]\nsensitive = ["sex"]\nlabels = "segment"\n\n'
        '[[audit]]\nuse = "quality_parity"\nparams = { squared = true, n_bootstrap = 50 }\n'
    )
    run = fairaudit.audit(str(path), sensitive=["sex"], chain=chain)
    r = _results(run.doc)[("cost_ratio", "sex")]
    assert r["detail"]["squared"] is True and r["detail"]["n_bootstrap"] == 50
    assert r["value"] > 1.5  # squared distances: about 1.6² times as high


def test_not_a_default_auditor():
    run = fairaudit.audit(_table(), sensitive=["sex"], labels="segment")
    assert not _results(run.doc)
