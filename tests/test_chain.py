"""Chain TOML: parsing, validation that collects every problem with its TOML path and a
did-you-mean, constraints, data flow, thresholds, and the shipped example chains."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from fairaudit.core.build import chain_from_flags
from fairaudit.core.chain import load_chain, parse_chain, parse_component_flag, parse_threshold_flag
from fairaudit.core.validate import validate_chain
from fairaudit.errors import ChainValidationError, ConfigError

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE_CHAINS = sorted((ROOT / "examples" / "chains").glob("*.toml"))


def _problems(text: str, registry, columns=None) -> dict[str, str]:
    """Parse + validate TOML text; return {toml path: message} of every problem."""
    with pytest.raises(ChainValidationError) as exc:
        spec = parse_chain(tomllib.loads(text), source="test.toml")
        validate_chain(spec, registry, columns=columns)
    err = exc.value
    # the message lists every problem, one per line, with its path
    for path, msg in err.problems:
        assert (f"  {path}: {msg}" if path else f"  {msg}") in str(err)
    return {path: msg for path, msg in err.problems}


def _ok(text: str, registry, columns=None):
    return validate_chain(parse_chain(tomllib.loads(text), source="ok.toml"), registry,
                          columns=columns)  # fmt: skip


BASE = '[data]\nsensitive = ["sex", "race"]\nlabels = "segment"\n'


def test_minimal_chain_validates(host):
    spec = _ok(BASE + '[[audit]]\nuse = "balance"\n', host.registry)
    assert spec.data.sensitive == ("sex", "race")
    assert [s.use for s in spec.audit] == ["balance"]
    assert spec.data.seed == 0


def test_all_problems_are_collected_at_once(host):
    text = (
        "[dta]\nx = 1\n"  # unknown top-level table
        '[data]\nsensitive = ["sex"]\nsede = 3\n'  # unknown key (did you mean seed?)
        "[options]\nmin_cell = -1\n"
        '[[cluster]]\nuse = "kmeans"\nparams = { n_clusters = 3 }\n'
        '[[cluster]]\nuse = "kmeans"\nname = "k2"\nparams = { n_cluster = 3 }\n'
        '[[cluster]]\nuse = "kmeens"\nname = "k3"\n'
        '[[cluster]]\nuse = "kmeans"\nname = "k4"\nparams = { n_clusters = 1, n_init = 0 }\n'
        '[[audit]]\nuse = "balance"\nthreshold = "high"\n'
        '[[audit]]\nuse = "distribution"\nparams = { wd_ground = "euclid" }\n'
        '[[threshold]]\nmetric = "balanse"\nmin = 0.5\n'
    )
    problems = _problems(text, host.registry)
    assert "dta" in problems and "unknown key" in problems["dta"]
    assert "data.sede" in problems and "did you mean seed" in problems["data.sede"]
    assert "options.min_cell" in problems
    assert "cluster[1].params.n_cluster" in problems
    assert "unknown parameter" in problems["cluster[1].params.n_cluster"]
    assert "did you mean n_clusters?" in problems["cluster[1].params.n_cluster"]
    assert "cluster[2].use" in problems and "did you mean 'kmeans'" in problems["cluster[2].use"]
    assert "an int >= 2" in problems["cluster[3].params.n_clusters"]
    assert "got 1" in problems["cluster[3].params.n_clusters"]
    assert "cluster[3].params.n_init" in problems
    assert "audit[0].threshold" in problems
    assert "'euclid'" in problems["audit[1].params.wd_ground"]
    assert "'zero-one'" in problems["audit[1].params.wd_ground"]  # the allowed options
    assert "threshold[0]" in problems and "did you mean balance" in problems["threshold[0]"]


def test_unknown_parameter_message_shape(host):
    text = (
        BASE + '[[cluster]]\nuse = "kmeans"\n'
        '[[cluster]]\nuse = "kmeans"\nname = "b"\nparams = { n_cluster = 4 }\n'
        '[[audit]]\nuse = "balance"\n'
    )
    with pytest.raises(ChainValidationError) as exc:
        _ok(text, host.registry)
    line = next(x for x in str(exc.value).splitlines() if "n_cluster" in x)
    assert line.strip().startswith("cluster[1].params.n_cluster: unknown parameter")
    assert "(did you mean n_clusters?)" in line
    assert "test.toml" in str(exc.value) or "ok.toml" in str(exc.value)


def test_structural_errors(host):
    problems = _problems(
        '[data]\nsensitive = 3\non_null = "drop"\n'
        "[[cluster]]\nparams = { n_clusters = 3 }\n"
        '[[audit]]\nuse = "balance"\nparams = 5\n'
        '[[threshold]]\nmetric = "balance"\nmin = 0.5\nmax = 0.9\n',
        host.registry,
    )
    assert "data.sensitive" in problems
    assert "data.on_null" in problems and "exclude" in problems["data.on_null"]
    assert "cluster[0].use" in problems
    assert "audit[0].params" in problems
    assert "threshold[0]" in problems and "min or max" in problems["threshold[0]"]


def test_nothing_to_audit(host):
    problems = _problems('[data]\nsensitive = ["sex"]\n[[audit]]\nuse = "balance"\n',
                         host.registry)  # fmt: skip
    assert any("nothing to audit" in m for m in problems.values())


def test_no_auditors(host):
    problems = _problems(BASE, host.registry)
    assert "audit" in problems and "auditor" in problems["audit"]


def test_data_flow_requires_what_earlier_steps_provide(host):
    from fairaudit.core.components import Auditor, Direction, MetricSpec

    class NeedsMemberships(Auditor):
        name = "needs_memberships"
        requires = frozenset({"labels", "memberships"})
        metrics = (MetricSpec("m", Direction.HIGHER_IS_BETTER, "m"),)

        def __init__(self) -> None:
            pass

    from fairaudit.core.plugins import ComponentInfo, Registry

    registry = Registry([*host.registry.all(),
                         ComponentInfo("auditor", "needs_memberships", NeedsMemberships,
                                       "test", "test", "0")])  # fmt: skip
    text = (
        BASE + '[[cluster]]\nuse = "kmeans"\n'  # kmeans provides labels + prototypes only
        '[[audit]]\nuse = "needs_memberships"\n'
    )
    problems = _problems(text, registry)
    assert "audit[0]" in problems
    assert "memberships" in problems["audit[0]"] and "needs_memberships" in problems["audit[0]"]


def test_duplicate_labelling_names(host):
    text = (
        BASE + '[[cluster]]\nuse = "kmeans"\n[[cluster]]\nuse = "kmeans"\n'
        '[[audit]]\nuse = "balance"\n'
    )
    problems = _problems(text, host.registry)
    assert "cluster[1].name" in problems and "kmeans" in problems["cluster[1].name"]


def test_thresholds(host):
    spec = _ok(
        BASE + '[[audit]]\nuse = "balance"\nthreshold = 0.8\n'
        '[[audit]]\nuse = "distribution"\nthreshold = 0.1\nseverity = "warning"\n'
        '[[threshold]]\nmetric = "balance_mean"\nattribute = "sex"\nmin = 0.9\non = "ci"\n',
        host.registry,
    )
    th = {t.metric: t for t in spec.thresholds}
    # a threshold on an [[audit]] step applies to that auditor's headline metric, in its direction
    assert th["balance"].bound == "min" and th["balance"].value == 0.8
    assert th["wd"].bound == "max" and th["wd"].severity == "warning"
    assert th["balance_mean"].attribute == "sex" and th["balance_mean"].on == "ci"
    problems = _problems(
        BASE + '[[audit]]\nuse = "balance"\n'
        '[[threshold]]\nmetric = "wd"\nmax = 0.1\n'  # metric of an auditor not in the chain
        '[[threshold]]\nmetric = "balance"\nattribute = "gender"\nmin = 0.5\n',
        host.registry,
    )
    assert "wd" in problems["threshold[0]"] and "balance" in problems["threshold[0]"]
    assert "gender" in problems["threshold[1]"] and "sex" in problems["threshold[1]"]


def test_columns_are_checked_against_the_schema(host):
    problems = _problems(
        '[data]\nsensitive = ["sexx", "race"]\nlabels = "segmnt"\nexclude = ["idd"]\n'
        '[[audit]]\nuse = "balance"\n',
        host.registry,
        columns=["id", "sex", "race", "segment", "x1"],
    )
    assert "'sex'" in problems["data.sensitive[0]"]
    assert "'segment'" in problems["data.labels"]
    assert "'id'" in problems["data.exclude[0]"]
    assert "data.sensitive[1]" not in problems


def test_load_chain_errors_name_the_file(tmp_path):
    with pytest.raises(ConfigError, match="absent.toml"):
        load_chain(tmp_path / "absent.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("[data\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"bad\.toml.*TOML"):
        load_chain(bad)


@pytest.mark.parametrize("path", EXAMPLE_CHAINS, ids=lambda p: p.name)
def test_example_chains_validate(run_cli, path):
    """Every shipped example validates with the installed plugins (incl. the example plugin)."""
    result = run_cli("validate", str(path))
    assert result.exit_code == 0, result.output
    assert "OK" in result.stdout


def test_there_are_example_chains():
    assert len(EXAMPLE_CHAINS) >= 3


# ----------------------------------------------------------------------------- flags
def test_threshold_flag_grammar():
    t = parse_threshold_flag("balance@ci[sex|race]=0.75", "min", "--fail-under")
    assert (t.metric, t.on, t.attribute, t.value, t.bound) == ("balance", "ci", "sex|race", 0.75,
                                                                "min")  # fmt: skip
    t = parse_threshold_flag("wd=0.2", "max", "--fail-over")
    assert (t.metric, t.on, t.attribute, t.bound) == ("wd", "value", None, "max")
    for bad in ("balance", "=0.3", "balance=abc", "balance@cx=0.2"):
        with pytest.raises(ConfigError, match="--fail-under"):
            parse_threshold_flag(bad, "min", "--fail-under")


def test_component_flag_grammar():
    assert parse_component_flag("kmeans") == ("kmeans", {})
    name, params = parse_component_flag("kmeans:n_clusters=4,n_init=2,k_range=[2,3],mode=fast")
    assert name == "kmeans"
    assert params == {"n_clusters": 4, "n_init": 2, "k_range": [2, 3], "mode": "fast"}
    with pytest.raises(ConfigError, match="kmeans:n_clusters"):
        parse_component_flag("kmeans:n_clusters")


def test_chain_from_flags_default_and_override(host, tmp_path):
    spec = chain_from_flags(host.registry, sensitive=("sex",), labels="segment")
    assert spec.cluster == ()  # an existing labelling alone: no clusterers
    # proxy features judge the data (sampled); they join the counting auditors by default
    assert [s.use for s in spec.audit] == ["balance", "distribution", "capacity", "quality",
                                          "proxy"]
    assert [s.use for s in spec.preprocess] == ["encode"]  # proxy needs numeric features
    spec = chain_from_flags(host.registry, sensitive=("sex",))
    assert spec.cluster and spec.cluster[0].use == "kmeans"
    chain = tmp_path / "c.toml"
    chain.write_text(
        '[data]\nsensitive = ["race"]\nlabels = "segment"\nseed = 4\n'
        '[options]\nbootstrap = 50\n[[audit]]\nuse = "balance"\n',
        encoding="utf-8",
    )
    base = load_chain(chain)
    spec = chain_from_flags(host.registry, sensitive=("sex",), seed=9, base=base)
    assert spec.data.sensitive == ("sex",) and spec.data.seed == 9
    assert spec.data.labels == "segment" and spec.options.bootstrap == 50


def test_flags_given_with_a_chain_are_not_ignored(run_cli, parquet_path, tmp_path):
    """``fairaudit audit --chain FILE`` plus an explicit option: the option wins; it is not
    silently dropped in favour of the chain (or of the defaults)."""
    import json

    chain = tmp_path / "c.toml"
    chain.write_text(BASE + '[[audit]]\nuse = "balance"\n', encoding="utf-8")
    out = tmp_path / "r.html"
    result = run_cli(
        "audit", str(parquet_path), "--chain", str(chain), "--out", str(out),
        "--bootstrap", "0", "--min-cell", "3", "--on-null", "error",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    options = json.loads(out.with_suffix(".json").read_text(encoding="utf-8"))["chain"]["options"]
    assert options["bootstrap"] == 0
    assert options["min_cell"] == 3
    assert options["on_null"] == "error"
