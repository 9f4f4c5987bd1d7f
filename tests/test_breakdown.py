"""Per-cluster breakdowns are per metric: every metric of a plugin auditor shows its own values
(issue 11 item 6). Contract: ``CountingAuditor.breakdown`` returns ``{metric: rows}`` or rows
naming their ``"metric"``; rows without one belong to the headline metric only."""

from __future__ import annotations

import numpy as np
import pytest
from fairaudit_builtins.sections import per_cluster_matrix
from fixture_plugins import load_fixture_plugin

from fairaudit.core.chain import parse_chain
from fairaudit.core.data import GroupTable
from fairaudit.core.plugins import Host, make_plugin_manager
from fairaudit.core.runner import run_chain

TABLE = GroupTable("sex", ("F", "M"), (0, 1), np.array([[3, 10], [7, 30]]), np.zeros(2, int))


@pytest.fixture(scope="module")
def two():
    return load_fixture_plugin("two_metrics")


def test_rows_without_a_metric_key_belong_to_the_headline_only(two):
    aud = two.LegacyTwo()
    assert [r["value"] for r in aud.breakdown_for(TABLE, "size")] == [10.0, 40.0]
    assert [r["value"] for r in aud.breakdown_for(TABLE, "half")] == [5.0, 20.0]


def test_a_mapping_gives_each_metric_its_rows(two):
    aud = two.MappedTwo()
    assert [r["value"] for r in aud.breakdown_for(TABLE, "size_m")] == [10.0, 40.0]
    assert [r["value"] for r in aud.breakdown_for(TABLE, "half_m")] == [5.0, 20.0]
    assert aud.breakdown_for(TABLE, "unknown") == ()


def test_builtin_auditors_keep_their_breakdowns():
    from fairaudit_builtins.auditors import BalanceAuditor, CapacityAuditor, DistributionAuditor

    assert {r["metric"] for r in BalanceAuditor().breakdown_for(TABLE, "balance")} == {"balance"}
    assert len(DistributionAuditor().breakdown_for(TABLE, "wd")) == 2
    assert len(DistributionAuditor().breakdown_for(TABLE, "ed")) == 2
    assert DistributionAuditor().breakdown_for(TABLE, "wd_max") == ()
    assert len(CapacityAuditor().breakdown_for(TABLE, "mnce")) == 2


def test_two_metric_plugin_in_a_run_shows_each_metrics_own_values(two, parquet_path):
    pm = make_plugin_manager(entrypoints=False)
    pm.register(two, name="two_metrics")
    host = Host(pm)
    spec = parse_chain({"data": {"sensitive": ["sex"], "labels": "segment"},
                        "audit": [{"use": "legacy_two"}, {"use": "mapped_two"}]})
    run = run_chain(spec, host, data_path=str(parquet_path))
    for size, half in (("size", "half"), ("size_m", "half_m")):
        s = run.results_for(metric=size, attribute="sex")[0]
        h = run.results_for(metric=half, attribute="sex")[0]
        sizes = [r["value"] for r in s["per_cluster"]]
        assert sum(sizes) == s["value"] == 2000
        assert [r["value"] for r in h["per_cluster"]] == [v / 2 for v in sizes]
        assert all("metric" not in r for r in s["per_cluster"] + h["per_cluster"])
    # the report files each metric's rows under that metric
    m = per_cluster_matrix(run.results_for(auditor="legacy_two", attribute="sex"), run)
    by_metric = {row["metric"]: row["values"] for row in m["rows"]}
    assert by_metric["half"] == [v / 2 for v in by_metric["size"]]


def test_metrics_with_an_open_end_of_their_range_run_and_render(parquet_path):
    """docs/writing_plugins.md allows ``None`` for one end of a metric's range: the interval is
    clipped at the closed end only, and the glossary and report render (was exit 3)."""
    from fairaudit.report.render import render_html

    pm = make_plugin_manager(entrypoints=False)
    pm.register(load_fixture_plugin("open_range"), name="open_range")
    host = Host(pm)
    spec = parse_chain({"data": {"sensitive": ["sex"], "labels": "segment"},
                        "audit": [{"use": "open_range"}]})
    run = run_chain(spec, host, data_path=str(parquet_path))
    ratio = run.results_for(metric="ratio", attribute="sex")[0]
    gap = run.results_for(metric="neg_gap", attribute="sex")[0]
    assert ratio["value"] >= 1.0 and ratio["ci"][0] >= 1.0
    assert ratio["ci"][0] <= ratio["value"] <= ratio["ci"][1]
    assert gap["value"] <= 0.0 and gap["ci"][1] <= 0.0
    assert "open_range" in render_html(run, host)
