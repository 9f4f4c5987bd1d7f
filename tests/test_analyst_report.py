"""The default report is the analyst's: exact values everywhere, small groups included.

Issue 22 (done when): the default report of the demo and of a table with an 18-person group
shows every headline as a number with a confidence interval — in the JSON and in the HTML —
and says plainly that it holds exact counts of small groups and is not for sharing. The retired
``suppress`` option is refused when it asks for protection and deprecated when it does not,
from the CLI (tests/test_cli.py), the chain and the API alike.
"""

from __future__ import annotations

import re
import warnings

import numpy as np
import polars as pl
import pytest
from conftest import EXAMPLE_DATA, make_synthetic

import fairaudit
from fairaudit.errors import ConfigError
from fairaudit.report.render import fmt_num, render_html

COUNTING = {"balance", "distribution", "capacity"}
"""The auditors whose headlines are functions of the counts: the ones cell suppression used to
withhold. Silhouette and the proxy association have no interval by design (docs/metrics.md)."""


def _counting_headlines(doc: dict) -> list[dict]:
    return [r for r in doc["results"] if r["headline"] and r["auditor"] in COUNTING]


def _assert_every_headline_is_a_number_with_a_ci(run: fairaudit.AuditRun) -> None:
    doc = run.doc
    heads = _counting_headlines(doc)
    assert heads
    for r in heads:
        where = (r["labelling"], r["metric"], r["attribute"])
        assert isinstance(r["value"], float), where
        assert r["ci"] is not None and all(isinstance(x, float) for x in r["ci"]), where
        assert r["ci"][0] <= r["value"] <= r["ci"][1], where
        assert "withheld" not in r and "bounds" not in r, where
    assert "suppressed" not in doc
    assert doc["privacy"] == {"mode": "exact"}
    html = render_html(run)
    assert "withheld" not in html.lower() and "val-bounds" not in html
    summary = html[html.index('id="sec-summary"'):html.index("</section>",
                                                              html.index('id="sec-summary"'))]
    for r in heads:
        assert fmt_num(r["value"]) in html, r["metric"]
    # the headline table shows numbers with their intervals, no ranges "a–b"
    assert not re.search(r"\d\.\d{3}&ndash;\d\.\d{3}", summary)
    assert "This report contains exact counts, small groups included" in html


# ----------------------------------------------------------------------------- the demo
@pytest.fixture(scope="module")
def demo_run() -> fairaudit.AuditRun:
    """`make demo`: the default comparison (k-means, FairDen, FFCM and the twins) of the
    bundled sample by sex and race, every option at its default."""
    return fairaudit.audit(str(EXAMPLE_DATA), sensitive="sex,race")


def test_demo_default_report_shows_every_headline_as_a_number_with_a_ci(demo_run):
    labellings = {lab["name"] for lab in demo_run.doc["labellings"]}
    assert {"kmeans", "fairden", "ffcm"} <= labellings
    _assert_every_headline_is_a_number_with_a_ci(demo_run)
    # every labelling x attribute has a headline for each counting auditor
    seen = {(r["labelling"], r["attribute"]) for r in _counting_headlines(demo_run.doc)}
    assert seen == {(lab, a) for lab in labellings for a in ("sex", "race", "sex|race")}


def test_demo_small_counts_are_exact(demo_run):
    doc = demo_run.doc
    race = {g["group"]: g for g in doc["input"]["groups"]["race"]}
    assert race["Other"]["n"] == 27 and race["Amer-Indian-Eskimo"]["n"] == 32
    assert all(isinstance(g["n"], int) for gs in doc["input"]["groups"].values() for g in gs)
    small_cells = 0
    for lab in doc["labellings"]:
        assert lab["n_noise"] is not None
        assert all(c["n"] is not None for c in lab["cluster_sizes"])
        for comp in lab["composition"].values():
            assert all(isinstance(v, int) for row in comp["counts"] for v in row)
            small_cells += sum(0 < v < 10 for row in comp["counts"] for v in row)
    assert small_cells > 0  # the cells of fewer than 10 people are there, exactly
    # the verdicts judge exact values: no reason mentions withheld values
    assert doc["verdicts"]
    assert not any("withheld" in reason for v in doc["verdicts"] for reason in v["reasons"])
    assert not any("withheld" in str(e) for e in doc.get("twins") or ())


# ----------------------------------------------------------------------------- 18 people
def _with_group_of_18() -> pl.DataFrame:
    """The synthetic table plus a race group of 18 people, 12 / 4 / 2 over the segments."""
    base = make_synthetic(2000, seed=3)
    extra = base.head(18).with_columns(
        pl.lit("d").alias("race"),
        pl.Series("segment", [0] * 12 + [1] * 4 + [2] * 2),
    )
    return pl.concat([base, extra])


def test_a_group_of_18_is_judged_with_exact_numbers_and_intervals():
    frame = _with_group_of_18()
    run = fairaudit.audit(frame, sensitive="sex,race", labels="segment",
                          cluster=["kmeans:n_clusters=3"], features=["x1", "x2"])
    _assert_every_headline_is_a_number_with_a_ci(run)
    doc = run.doc
    d = next(g for g in doc["input"]["groups"]["race"] if g["group"] == "d")
    assert d == {"group": "d", "n": 18, "share": pytest.approx(18 / 2018), "small": False}
    seg = next(lab for lab in doc["labellings"] if lab["name"] == "segment")
    comp = seg["composition"]["race"]
    assert comp["counts"][comp["groups"].index("d")] == [12, 4, 2]
    balance = next(r for r in doc["results"] if r["labelling"] == "segment"
                   and r["metric"] == "balance" and r["attribute"] == "race")
    assert "too_small" not in balance["detail"]  # 18 >= min_cell 10: judged
    counts = np.array(comp["counts"])
    assert balance["value"] == pytest.approx(fairaudit.metrics.balance_min(counts))


def compas_like() -> pl.DataFrame:
    """The issue's recidivism table in shape: six race groups of which two have 32 and 18
    people, three segments (7,214 rows)."""
    rng = np.random.default_rng(7)
    sizes = {"African-American": 3696, "Caucasian": 2454, "Hispanic": 637, "Other": 377,
             "Asian": 32, "Native American": 18}
    race = np.concatenate([[g] * n for g, n in sizes.items()])
    sex = rng.choice(["Female", "Male"], size=race.size, p=[0.19, 0.81])
    seg = rng.choice([0, 1, 2], size=race.size, p=[0.5, 0.3, 0.2])
    return pl.DataFrame({"race": race, "sex": sex, "segment": seg})


def test_gates_and_verdicts_judge_the_exact_values_of_small_groups():
    df = compas_like()
    run = fairaudit.audit(df, sensitive="race,sex", labels="segment",
                          fail_under={"balance": 0.99})
    _assert_every_headline_is_a_number_with_a_ci(run)
    r = next(r for r in run.results if r["metric"] == "balance" and r["attribute"] == "race")
    T = np.array([[int(((df["race"] == g) & (df["segment"] == k)).sum()) for k in range(3)]
                  for g in sorted(set(df["race"].to_list()))])
    assert r["value"] == pytest.approx(fairaudit.metrics.balance_min(T))
    assert r["status"] == "fail" and run.exit_code == 1
    gate = next(g for g in run.doc["gates"] if g["metric"] == "balance"
                and g["attribute"] == "race")
    assert gate["value"] == r["value"] and gate["judged"] == r["value"]
    assert "withheld" not in gate and "bounds" not in gate
    verdict = next(v for v in run.doc["verdicts"] if v["attribute"] == "race")
    assert any(r["metric"] in reason for reason in verdict["reasons"])


# ----------------------------------------------------------------------------- suppress
def test_api_refuses_a_request_for_suppression():
    with pytest.raises(ConfigError) as err:
        fairaudit.audit(make_synthetic(200), sensitive="sex", labels="segment", suppress=True)
    assert "suppress" in str(err.value) and "--publish" in str(err.value)


def test_api_accepts_suppress_false_with_a_deprecation_warning():
    with pytest.warns(FutureWarning, match="suppress= is deprecated"):
        run = fairaudit.audit(make_synthetic(200), sensitive="sex", labels="segment",
                              suppress=False, bootstrap=0)
    assert run.doc["privacy"] == {"mode": "exact"}


def test_api_without_suppress_gives_no_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        fairaudit.audit(make_synthetic(200), sensitive="sex", labels="segment", bootstrap=0)


def _chain(tmp_path, options: str):
    path = tmp_path / "chain.toml"
    path.write_text('[data]\nsensitive = ["sex"]\nlabels = "segment"\n'
                    f'[options]\n{options}\n[[audit]]\nuse = "balance"\n', encoding="utf-8")
    return path


def test_chain_refuses_a_request_for_suppression(tmp_path):
    frame = make_synthetic(200)
    with pytest.raises(ConfigError) as err:
        fairaudit.audit(frame, sensitive="sex", chain=_chain(tmp_path, "suppress = true"))
    assert "options.suppress" in str(err.value) and "--publish" in str(err.value)
    with pytest.raises(ConfigError, match="options.suppress"):
        fairaudit.audit(frame, sensitive="sex", chain=_chain(tmp_path, 'suppress = "yes"'))
    with pytest.warns(FutureWarning, match="options.suppress is deprecated"):
        run = fairaudit.audit(frame, sensitive="sex",
                              chain=_chain(tmp_path, "suppress = false\nbootstrap = 0"))
    assert "suppress" not in run.doc["chain"]["options"]


# ----------------------------------------------------------------------------- min_cell
@pytest.mark.parametrize("bad", [0, -4, True, 2.5])
def test_api_refuses_min_cell_below_one(bad):
    with pytest.raises(ConfigError, match="min_cell"):
        fairaudit.audit(make_synthetic(200), sensitive="sex", labels="segment", min_cell=bad)


@pytest.mark.parametrize("bad", [0, -4])
def test_chain_refuses_min_cell_below_one(tmp_path, bad):
    with pytest.raises(ConfigError, match=r"options\.min_cell: expected an int >= 1"):
        fairaudit.audit(make_synthetic(200), sensitive="sex",
                        chain=_chain(tmp_path, f"min_cell = {bad}"))


# ----------------------------------------------------------------------------- the notice
def test_console_and_markdown_summaries_carry_the_notice():
    import json

    from fairaudit.report.summary import EXACT_NOTICE, console_lines, markdown

    doc = json.loads((EXAMPLE_DATA.parents[2] / "tests/data/sample_audit.json")
                     .read_text(encoding="utf-8"))
    assert doc["privacy"] == {"mode": "exact"}
    assert console_lines(doc)[1] == "note: " + EXACT_NOTICE
    assert f"> {EXACT_NOTICE}" in markdown(doc)
    for text in ("exact counts", "small groups", "people allowed to see the data", "--publish"):
        assert text in EXACT_NOTICE
    # a document that does not declare its mode (written before schema 1.1) claims nothing
    del doc["privacy"]
    # (other notes, e.g. rows left out, may remain: only the privacy notice must go)
    assert not any(line == "note: " + EXACT_NOTICE for line in console_lines(doc))
    assert not any("--publish" in line for line in console_lines(doc))
    assert "--publish" not in markdown(doc)
    assert "privacy-notice" not in render_html(fairaudit.AuditRun.from_json(doc))
