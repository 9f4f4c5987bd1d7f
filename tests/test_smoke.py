"""End-to-end smoke: labels audit on synthetic data through the Python API."""

from __future__ import annotations

import json

from fairaudit.core.build import chain_from_flags
from fairaudit.core.chain import parse_threshold_flag
from fairaudit.core.runner import run_chain


def test_labels_audit_planted_imbalance(host, parquet_path):
    spec = chain_from_flags(
        host.registry,
        sensitive=["sex", "race"],
        labels="segment",
        seed=3,
        thresholds=[parse_threshold_flag("balance=0.9", "min", "--fail-under")],
    )
    run = run_chain(spec, host, data_path=str(parquet_path))
    doc = run.to_json()
    assert doc["input"]["attributes"] == ["sex", "race", "sex|race"]
    bal = run.results_for(metric="balance", attribute="sex")[0]
    # segment 0 is 80% F vs ~40% overall: balance of cluster 0 is far from 1
    assert bal["value"] < 0.6
    assert bal["status"] == "fail"
    assert run.exit_code == 1
    lo, hi = bal["ci"]
    assert lo <= bal["value"] <= hi
    json.dumps(doc)


def test_json_matches_schema(host, parquet_path):
    import importlib.resources

    import jsonschema

    schema = json.loads(
        importlib.resources.files("fairaudit").joinpath("schema/audit.schema.json").read_text()
    )
    spec = chain_from_flags(
        host.registry,
        sensitive=["sex", "race"],
        labels="segment",
        clusters=["kmeans:n_clusters=3"],
        features=["x1", "x2"],
        thresholds=[parse_threshold_flag("wd@ci=0.3", "max", "--fail-over")],
    )
    run = run_chain(spec, host, data_path=str(parquet_path))
    jsonschema.validate(run.to_json(), schema)
    assert {lab["name"] for lab in run.labellings} == {"segment", "kmeans"}
