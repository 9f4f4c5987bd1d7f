"""Defects a new user met in a trial of main: every message names what the user wrote (keyword,
flag or TOML key), and the words of the report read as a person reads them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import fairaudit
from fairaudit.errors import ChainValidationError, ConfigError
from tests.conftest import make_synthetic

ROOT = Path(__file__).resolve().parents[1]


def _audit_cli(tmp_path: Path, data, *args: str):
    """``fairaudit audit`` on ``data`` (written as Parquet) with ``args``; the click result."""
    from click.testing import CliRunner

    from fairaudit.cli import main

    path = tmp_path / "d.parquet"
    if not path.exists():
        data.write_parquet(path)
    return CliRunner().invoke(main, ["audit", str(path), *args, "-o", str(tmp_path / "r.html")])


# ------------------------------------------------------------------ 1. the keyword API's names
@pytest.mark.parametrize(("kwargs", "named"), [
    ({"cluster": [("kmeans", {"n_cluster": 4})]},
     "  cluster[0].params.n_cluster: unknown parameter of 'kmeans' (did you mean n_clusters?)"),
    ({"cluster": ["kmeans:n_cluster=4"]}, "  cluster[0].params.n_cluster: unknown parameter"),
    ({"labels": "segment", "audit": [("balance", {"bogus": 1})]},
     "  audit[0].params.bogus: unknown parameter of 'balance'"),
    ({"sensitive": ["sexx"], "labels": "segment"},
     "  sensitive: column 'sexx' is not in the data (did you mean 'sex'?)"),
    ({"labels": "segmnt"}, "  labels: column 'segmnt' is not in the data"),
    ({"labels": "segment", "fail_under": {"wd": 0.1}},
     "  fail_under['wd']: 'wd' is lower-is-better: a lower bound on it rewards unfairness; "
     "use fail_over instead"),
    ({"labels": "segment", "warn_over": {"balance": 0.5}},
     "  warn_over['balance']: 'balance' is higher-is-better: an upper bound on it rewards "
     "unfairness; use warn_under instead"),
    ({"labels": "segment", "fail_under": {"balance@ci": 0.5}, "bootstrap": 0},
     "intervals are off (bootstrap=0); give bootstrap=N or drop @ci"),
])
def test_keyword_errors_name_the_keyword_never_a_flag(kwargs, named):
    kwargs = {"sensitive": ["sex"], "twins": False, **kwargs}
    with pytest.raises(ChainValidationError) as exc:
        fairaudit.audit(make_synthetic(n=200), **kwargs)
    text = str(exc.value)
    assert text.startswith("1 problem(s) in the arguments of fairaudit.audit:"), text
    assert named in text, text
    assert "--" not in text and "[[" not in text, text


def test_an_unknown_skipped_auditor_is_named_as_the_keyword():
    with pytest.raises(ConfigError, match=r"^skip_audit 'balnce': unknown auditor"):
        fairaudit.audit(make_synthetic(n=100), sensitive=["sex"], labels="segment",
                        skip_audit=["balnce"])


def test_the_keyword_api_records_its_source():
    run = fairaudit.audit(make_synthetic(n=300), sensitive=["sex"], labels="segment",
                          bootstrap=0, fail_under={"balance": 0.01})
    assert run.doc["chain"]["source"] == "api"
    assert run.doc["chain"]["thresholds"][0]["source"] == "fail_under['balance']"


def test_a_toml_threshold_against_the_direction_says_use_max():
    from fairaudit.core.chain import parse_chain

    spec = parse_chain({"data": {"sensitive": ["sex"], "labels": "segment"},
                        "audit": [{"use": "distribution"}],
                        "threshold": [{"metric": "wd", "min": 0.1}]}, source="c.toml")
    with pytest.raises(ChainValidationError) as exc:
        fairaudit.audit(make_synthetic(n=100), chain=spec)
    assert ("  threshold[0].min: 'wd' is lower-is-better: a lower bound on it rewards "
            "unfairness; use max = ... instead") in str(exc.value)
    assert "--" not in str(exc.value)


def test_the_cli_still_names_its_flags(tmp_path):
    from click.testing import CliRunner

    from fairaudit.cli import main

    path = tmp_path / "d.parquet"
    make_synthetic(n=200).write_parquet(path)
    res = CliRunner().invoke(main, ["audit", str(path), "--sensitive", "sex", "--labels",
                                    "segment", "--fail-under", "wd=0.1", "--cluster",
                                    "kmeans:n_cluster=3", "-o", str(tmp_path / "r.html")])
    assert res.exit_code == 2, res.output
    assert "--cluster[0].params.n_cluster: unknown parameter" in res.output
    assert "--fail-under wd=0.1: 'wd' is lower-is-better" in res.output
    assert "use --fail-over instead" in res.output


# ------------------------------------------------------------------ 7. the distribution's name
def test_install_hints_name_the_distribution():
    import tomllib

    dist = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["name"]
    assert dist != "fairaudit"  # README: `fairaudit` on the index is an unrelated project
    # (the README's warning "`pip install fairaudit` does **not** install this tool" is right)
    wrong = re.compile(r"pip install\s+['\"]?fairaudit(\[|['\"\s`]|$)(?!\s*does \*\*not)",
                       re.M)
    files = [*ROOT.glob("fairaudit/**/*.py"), *ROOT.glob("docs/**/*.md"), ROOT / "README.md",
             *ROOT.glob("plugins/**/*.py"), *ROOT.glob("examples/**/*")]
    bad = [str(f.relative_to(ROOT)) for f in files
           if f.is_file() and wrong.search(f.read_text(errors="replace").replace("\n  ", " "))]
    assert not bad, f"install hints naming 'fairaudit' instead of {dist!r}: {bad}"
    from click.testing import CliRunner

    from fairaudit.cli import main

    help_text = CliRunner().invoke(main, ["audit", "--help"]).output
    assert f"'{dist}[dask]'" in " ".join(help_text.split())


# ------------------------------------------------------------------ 2. a date column
def _with_date(n: int = 300):
    import datetime as dt

    import polars as pl

    data = make_synthetic(n=n)
    days = [dt.datetime(2020, 1, 1) + dt.timedelta(days=i % 365) for i in range(n)]
    return data.with_columns(pl.Series("date", days))


def test_a_labels_only_audit_runs_beside_a_date_column(tmp_path):
    import json

    args = ("--sensitive", "sex,race", "--labels", "segment", "--bootstrap", "0")
    res = _audit_cli(tmp_path, _with_date(), *args)
    assert res.exit_code == 0, res.output
    assert ("note: column 'date' is a date/time (Datetime): not used as a feature (cast it to a "
            "number to use it); --exclude date silences this note") in res.output
    doc = json.loads((tmp_path / "r.json").read_text())
    assert "date" in doc["input"]["excluded_columns"]
    res = _audit_cli(tmp_path, None, *args, "--exclude", "date")
    assert res.exit_code == 0 and "date/time" not in res.output, res.output


def test_a_date_column_is_left_out_of_the_default_features_in_python_too():
    run = fairaudit.audit(_with_date(), sensitive=["sex"], cluster=[("kmeans", {"n_clusters": 3})],
                          bootstrap=0, twins=False)
    why = run.doc["input"]["excluded_columns"]["date"]
    assert why.endswith("exclude=['date'] silences this note"), why


def test_a_date_column_named_as_a_feature_gets_an_error_naming_the_flag(tmp_path):
    res = _audit_cli(tmp_path, _with_date(), "--sensitive", "sex", "--labels", "segment",
                     "--features", "x1,date")
    assert res.exit_code == 2, res.output
    assert "the default preprocessing 'encode' (default.preprocess[0]): " in res.output
    assert "column 'date'" in res.output and "(leave it out of --features)" in res.output


# ------------------------------------------------------------------ 3. every row noise
def test_all_noise_says_no_clusters_and_notes_join_cleanly(tmp_path):
    import html

    run = fairaudit.audit(make_synthetic(n=200), sensitive=["sex"],
                          cluster=[("dbscan", {"eps": 1e-6})], bootstrap=0)
    html_path, _ = fairaudit.write_report(run, tmp_path / "r.html")
    text = html.unescape(html_path.read_text())
    assert "No verdict: no clusters: every row was noise" in text
    assert "none of the headline metrics has a verdict bound" not in text
    assert ".;" not in text and ". ;" not in text


def test_join_clauses():
    from fairaudit.report.words import join_clauses

    assert join_clauses(["a were left out.", " b: c. ", "", "d"]) == "a were left out; b: c; d"
    assert join_clauses([]) == ""


# ------------------------------------------------------------------ 4. parameters as people read them
def test_parameters_read_as_words_not_python():
    from fairaudit_builtins.section_helpers import labelling_about, labelling_caption

    from fairaudit.report.render import fmt_params

    params = {"n_init": 10, "fair": True, "standardize": False, "labellings": None,
              "tol": 1e-6, "share": 0.01, "random_state": 3}
    assert fmt_params(params) == ("fair: yes, n_init = 10, random_state = 3, share = 0.01, "
                                  "standardize: no, tol = 1e-06")
    km = {"name": "kmeans", "component": "kmeans", "params": {"n_init": 10, "random_state": 0}}
    assert labelling_about(km) == "n_init = 10"
    assert labelling_caption(km) == "clusterer kmeans (n_init = 10)"
    twin = {"name": "fairden-unfair", "component": "fairden", "params": {"fair": False}}
    assert labelling_about(twin) == "clusterer fairden, fair: no"
    assert labelling_about({"origin": "column", "name": "seg", "column": "seg"}) == "column ‘seg’"


def test_the_report_shows_no_python_reprs(tmp_path):
    import html
    import re as re_

    run = fairaudit.audit(make_synthetic(n=300), sensitive=["sex"],
                          cluster=[("kmeans", {"n_clusters": 3})], bootstrap=0, twins=False)
    text = html.unescape(fairaudit.write_report(run, tmp_path / "r.html")[0].read_text())
    body = re_.sub(r"<script.*?</script>", "", text, flags=re_.S)
    assert "clusterer kmeans (clusterer" not in body and "kmeans (clusterer kmeans" not in body
    assert not re_.search(r"\w=(True|False|None)\b", body), re_.search(
        r".{60}\w=(True|False|None)\b.{20}", body)


# ------------------------------------------------------------------ 5. labellings counted right
def test_the_headline_table_counts_labellings_not_the_data_column(tmp_path):
    run = fairaudit.audit(make_synthetic(n=300), sensitive=["sex"],
                          cluster=[("kmeans", {"n_clusters": 3})], bootstrap=0, twins=False)
    assert any(r["labelling"] == "(data)" for r in run.results)  # proxy judges the data
    text = fairaudit.write_report(run, tmp_path / "r.html")[0].read_text()
    assert re.search(r"\(\d+ rows &times; 1 labelling and the data\)", text), text[:0]


# ------------------------------------------------------------------ 6. did-you-mean lists
def test_unknown_metric_lists_the_same_full_sorted_set_for_every_gate_flag(tmp_path):
    from click.testing import CliRunner

    from fairaudit.cli import main

    path = tmp_path / "d.parquet"
    make_synthetic(n=200).write_parquet(path)
    listed = {}
    for flag, text in (("--fail-under", "balnce=0.5"), ("--fail-over", "wdd=0.5"),
                       ("--warn-under", "balnce=0.5"), ("--warn-over", "wdd=0.5")):
        res = CliRunner().invoke(main, ["audit", str(path), "--sensitive", "sex", "--labels",
                                        "segment", flag, text, "-o", str(tmp_path / "r.html")])
        assert res.exit_code == 2, res.output
        assert f"{flag} {text}: threshold on unknown metric" in res.output
        listed[flag] = res.output.split("the chain's auditors give: ", 1)[1].split("\n")[0]
    assert len(set(listed.values())) == 1, listed
    names = next(iter(listed.values())).split(", ")
    assert names == sorted(names) and {"balance", "mnce", "ne", "wd", "wd_sum"} <= set(names)


# ------------------------------------------------------------------ 8. @lower and "cannot judge"
def test_every_interval_form_is_in_help_and_a_straddling_interval_says_why(tmp_path):
    from click.testing import CliRunner

    from fairaudit.cli import main

    help_text = " ".join(CliRunner().invoke(main, ["audit", "--help"]).output.split())
    assert "--fail-under METRIC[@ci|@lower|@upper]=VALUE" in help_text
    assert "--fail-over METRIC[@ci|@upper|@lower]=VALUE" in help_text
    cli_md = (ROOT / "docs" / "cli.md").read_text()
    assert "balance@lower=0.6` is the same" in cli_md

    import numpy as np
    import polars as pl

    rng = np.random.default_rng(2)
    n = 120
    path = tmp_path / "small.parquet"
    pl.DataFrame({"sex": rng.choice(["F", "M"], n), "seg": rng.integers(0, 3, n),
                  "x": rng.normal(size=n)}).write_parquet(path)
    run = fairaudit.audit(path, sensitive="sex", labels="seg", fail_under={"balance@lower": 0.8})
    gate = run.doc["gates"][0]
    lo, hi = next(r["ci"] for r in run.results if r["metric"] == "balance")
    assert lo < 0.8 < hi and gate["status"] == "fail"  # the interval straddles the bound
    assert gate["reason"].startswith("failed because the data cannot judge: the confidence "
                                     "interval [")
    res = CliRunner().invoke(main, ["audit", str(path), "--sensitive", "sex", "--labels", "seg",
                                    "--fail-under", "balance@lower=0.8",
                                    "-o", str(tmp_path / "r.html")])
    assert res.exit_code == 1
    assert "why: failed because the data cannot judge" in res.output
    assert "failed because the data cannot judge" in (tmp_path / "r.html").read_text()
    # a gate on the value judges: no such excuse
    run = fairaudit.audit(path, sensitive="sex", labels="seg", fail_under={"balance": 0.99})
    assert run.doc["gates"][0]["status"] == "fail" and run.doc["gates"][0]["reason"] is None


@pytest.mark.parametrize(("on", "bound", "value", "ci", "status", "cannot_judge"), [
    ("ci", "min", 0.79, (0.5, 1.0), "fail", True),      # straddles: cannot judge
    ("lower", "min", 0.85, (0.6, 0.95), "fail", True),  # value clears, interval does not
    ("ci", "min", 0.5, (0.4, 0.6), "fail", False),      # shown below the bound
    ("upper", "min", 0.5, (0.4, 0.6), "fail", False),   # shown below the bound
    ("ci", "max", 0.05, (0.0, 0.2), "fail", True),      # wd-like, straddles
    ("ci", "max", 0.3, (0.2, 0.4), "fail", False),      # shown above the bound
    ("ci", "min", 0.9, (0.85, 0.95), "pass", False),
])
def test_a_gate_on_the_interval_says_when_it_failed_because_it_cannot_judge(
        on, bound, value, ci, status, cannot_judge):
    from fairaudit.ops.gates import evaluate_gates
    from fairaudit.report.results import Direction, MetricResult, Threshold

    direction = Direction.HIGHER_IS_BETTER if bound == "min" else Direction.LOWER_IS_BETTER
    r = MetricResult("a", "m", "lab", value, direction, attribute="sex", ci=ci)
    th = Threshold("m", 0.8 if bound == "min" else 0.1, bound=bound, on=on)
    _, (gate,) = evaluate_gates([r], [th], {})
    assert gate.status.value == status
    assert (gate.reason is not None and "cannot judge" in gate.reason) is cannot_judge


# ------------------------------------------------------------------ 9. FairSC's target on the console
def test_fairsc_over_two_attributes_warns_on_the_console_that_it_balanced_the_intersection(
        tmp_path):
    from click.testing import CliRunner

    from fairaudit.cli import main

    path = tmp_path / "d.parquet"
    make_synthetic(n=300).write_parquet(path)
    res = CliRunner().invoke(main, ["audit", str(path), "--sensitive", "sex,race", "--cluster",
                                    "fairsc:n_clusters=3", "--bootstrap", "0", "--no-twins",
                                    "-o", str(tmp_path / "r.html")])
    assert res.exit_code == 0, res.output
    assert ("warning: fairsc: FairSC balances one attribute, so it balanced the intersection of "
            "sex, race (6 groups), not each attribute on its own.") in res.output
    import json

    lab = json.loads((tmp_path / "r.json").read_text())["labellings"][0]
    assert any(n.startswith("Fairness target: FairSC balances") for n in lab["notes"])


def test_no_sensitive_columns_is_one_problem_not_one_per_step():
    from fairaudit.core.plugins import Host
    from fairaudit.core.spec import ChainSpec, DataSpec, StepSpec
    from fairaudit.core.validate import validate_chain

    with pytest.raises(ChainValidationError) as exc:
        fairaudit.audit(make_synthetic(n=100), sensitive=[])
    assert str(exc.value).splitlines()[1:] == [
        "  sensitive: no sensitive columns given (sensitive=['a', 'b'])"]
    spec = ChainSpec(data=DataSpec(sensitive=(), labels="segment"),
                     audit=(StepSpec("audit", "balance"), StepSpec("audit", "distribution")))
    with pytest.raises(ChainValidationError) as exc:
        validate_chain(spec, Host.create(entrypoints=False).registry)
    assert exc.value.problems == (
        ("chain.data.sensitive", "no sensitive columns given (DataSpec(sensitive=('a', 'b'))); "
                                 "balance, distribution need them"),)
