"""Same input + seed => identical JSON; the ``timing`` block is only there when asked for."""

from __future__ import annotations

import json
from pathlib import Path


def _audit_json(run_cli, data: Path, out: Path, *args: str) -> dict:
    result = run_cli("audit", str(data), "--sensitive", "sex", "--out", str(out), *args)
    assert result.exit_code in (0, 1), result.output
    return json.loads(out.with_suffix(".json").read_text(encoding="utf-8"))


def _without_timing(doc: dict) -> dict:
    assert "timing" not in doc  # left out by default: the JSON is byte-identical
    return dict(doc)


CLUSTERS = ("kmeans:n_clusters=3", "dbscan:eps=0.5")


def _run(host, data: Path, seed: int) -> dict:
    from fairaudit.core.build import chain_from_flags
    from fairaudit.core.chain import parse_threshold_flag
    from fairaudit.core.runner import run_chain

    spec = chain_from_flags(
        host.registry, sensitive=("sex", "race"), labels="segment", clusters=CLUSTERS,
        features=("x1", "x2"), sample=1500, seed=seed,
        thresholds=[parse_threshold_flag("balance@ci=0.3", "min", "--fail-under")],
    )  # fmt: skip
    doc = run_chain(spec, host, data_path=str(data)).to_json()
    return json.loads(json.dumps(doc))  # exactly what the CLI writes


def test_same_seed_same_json(host, parquet_path):
    a = _run(host, parquet_path, 11)
    b = _run(host, parquet_path, 11)
    assert json.dumps(_without_timing(a), sort_keys=True) == json.dumps(
        _without_timing(b), sort_keys=True
    )
    # the document is not trivially empty: clustering, sampling and CIs are all in it
    assert [lab["name"] for lab in a["labellings"]] == ["segment", "kmeans", "dbscan"]
    assert a["input"]["sample"]["rows"] == 1500
    assert any(r["ci"] for r in a["results"])


def test_a_different_seed_changes_the_random_parts(host, parquet_path):
    a = _run(host, parquet_path, 11)
    c = _run(host, parquet_path, 12)
    assert _without_timing(a) != _without_timing(c)
    assert a["chain"]["seed"] == 11 and c["chain"]["seed"] == 12
    # counting metrics of the labels column use every row: same values, other bootstrap CIs
    # (the silhouette of ``quality`` is measured on the in-memory sample, which the seed draws)
    seg_a = [r for r in a["results"] if r["labelling"] == "segment" and r["auditor"] != "quality"]
    seg_c = [r for r in c["results"] if r["labelling"] == "segment" and r["auditor"] != "quality"]
    assert [r["value"] for r in seg_a] == [r["value"] for r in seg_c]
    assert [r["ci"] for r in seg_a] != [r["ci"] for r in seg_c]


def test_cli_json_is_deterministic_and_html_follows_from_it(run_cli, parquet_path, tmp_path):
    args = ("--labels", "segment", "--seed", "3")
    a = _audit_json(run_cli, parquet_path, tmp_path / "a.html", *args)
    b = _audit_json(run_cli, parquet_path, tmp_path / "b.html", *args)
    assert _without_timing(a) == _without_timing(b)
    result = run_cli("render", str(tmp_path / "a.json"), "-o", str(tmp_path / "x.html"))
    assert result.exit_code == 0, result.output
    assert (tmp_path / "x.html").read_bytes() == (tmp_path / "a.html").read_bytes()
