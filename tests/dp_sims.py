"""Coverage of the published (``--publish``) intervals by simulation, shared by
``tests/test_publish_intervals.py`` and ``benchmarks/dp_coverage.py``.

Each draw samples ``n`` rows from a population cube (clusters x groups of each attribute),
releases it exactly as a published run does (:class:`fairaudit.privacy.publish.Release`:
OpenDP's discrete Laplace noise, the projection and rounding), draws the release's parametric
replicates from the published seed and runs the built-in counting auditors on the released
tables the way the host does (``fairaudit.core.steps.run_counting``). Per metric: the share of
95 % intervals that contain the population value (computed exactly from the population cube),
missed below / above, and how often the verdict's rule calls the result "unfair" (balance:
upper end below 0.8; wd: lower end above 0.1) — under random labels (the null) every "unfair"
is a false alarm.
"""

from __future__ import annotations

import dataclasses
import functools
from types import SimpleNamespace

import numpy as np

from fairaudit.core.contingency import JointTable
from fairaudit.core.spec import PrivacySpec
from fairaudit.privacy.publish import Release

LAB = SimpleNamespace(name="seg", origin="column", column="seg")
AUDITORS = ("balance", "distribution", "capacity")
UNFAIR = {"balance": ("upper", 0.8), "wd": ("lower", 0.1)}
"""The built-in verdict bounds (MetricSpec.verdict_bound): 'unfair' when the whole interval is
on the wrong side."""


@dataclasses.dataclass(frozen=True)
class Regime:
    name: str
    cube: np.ndarray
    """Population shares, clusters x groups (x groups of a second attribute)."""
    n: int
    epsilon: float
    attribute: str
    """The table judged: an attribute, or ``a|b`` for the intersection."""
    about: str
    domain: str = "public"
    """``--dp-domain``: public (every cell noised) or private (cells below a threshold not
    released)."""


def _dense() -> np.ndarray:
    pop = np.array([[0.20, 0.15, 0.15, 0.10],      # group a, 60 %
                    [0.05, 0.10, 0.12, 0.12],      # group b, 39 %
                    [0.004, 0.003, 0.002, 0.001]])  # group c, 1 %
    return (pop / pop.sum()).T


def _null(k: int, *groups: np.ndarray) -> np.ndarray:
    """Labels drawn at random into k equal segments, independently of the groups."""
    cube = np.full(k, 1.0 / k)
    for g in groups:
        cube = np.multiply.outer(cube, g / g.sum())
    return cube


A8 = np.array([0.30, 0.20, 0.15, 0.10, 0.10, 0.06, 0.05, 0.04])
B6 = np.array([0.35, 0.25, 0.15, 0.10, 0.10, 0.05])


def _rare_cell() -> np.ndarray:
    """4 segments; a 1.67 % group (100 of 6,000 people) with 5 % of its members in segment 0
    (about 5 people: the cell a release can publish as 0), the others spread evenly."""
    g = np.array([0.60, 0.3833, 0.0167])
    spread = np.array([[0.25, 0.25, 0.25, 0.25], [0.25, 0.25, 0.25, 0.25],
                       [0.05, 0.35, 0.30, 0.30]])
    return (g[:, None] * spread).T


REGIMES: dict[str, Regime] = {r.name: r for r in [
    Regime("dense-20k-e1", _dense(), 20_000, 1.0, "race",
           "1 % group, 4 segments, 20,000 rows, epsilon 1 (docs/privacy.md's table)"),
    Regime("dense-20k-e0.5", _dense(), 20_000, 0.5, "race", "the same at epsilon 0.5"),
    Regime("dense-20k-e0.1", _dense(), 20_000, 0.1, "race", "the same at epsilon 0.1"),
    Regime("dense-5k-e1", _dense(), 5_000, 1.0, "race", "the same, 5,000 rows, epsilon 1"),
    Regime("null-12x8-e0.5", _null(8, np.ones(12)), 3_000, 0.5, "race",
           "random labels, 8 segments, 12 equal groups (96 cells of ~31), 3,000 rows, eps 0.5"),
    Regime("null-12x8-e1", _null(8, np.ones(12)), 3_000, 1.0, "race", "the same at epsilon 1"),
    Regime("null-48x6-e0.5", _null(6, A8, B6), 6_000, 0.5, "race|sex",
           "random labels, 6 segments, intersection of 8 x 6 unequal groups (288 cells), "
           "6,000 rows, epsilon 0.5"),
    Regime("null-48x6-e1", _null(6, A8, B6), 6_000, 1.0, "race|sex", "the same at epsilon 1"),
    Regime("sparse-48x8-e1", _null(8, np.ones(8), np.ones(6)), 2_000, 1.0, "race|sex",
           "random labels, 8 segments, intersection of 8 x 6 equal groups (384 cells of ~5), "
           "2,000 rows, epsilon 1"),
    Regime("rare-cell-e0.5", _rare_cell(), 6_000, 0.5, "race",
           "a 100-person group with ~5 people in one of 4 segments, 6,000 rows, epsilon 0.5"),
    Regime("private-20k-e1", _dense(), 20_000, 1.0, "race",
           "dense-20k-e1 with --dp-domain private (threshold 16 at delta 1e-7)", "private"),
    Regime("private-100k-e1", _dense(), 100_000, 1.0, "race",
           "the same with 100,000 rows (cells of the 1 % group 100-400)", "private"),
]}

NAMES = (("race",), ("race", "sex"))


def joint_of(counts: np.ndarray) -> JointTable:
    """A clusters x groups (x groups) count cube as a joint table (attributes race[, sex])."""
    shape = counts.shape
    idx = np.indices(shape).reshape(len(shape), -1)
    c = counts.reshape(-1)
    keep = c > 0
    attrs = NAMES[len(shape) - 2]
    cats = tuple(tuple(f"{a[0]}{i}" for i in range(s)) for a, s in zip(attrs, shape[1:],
                                                                          strict=True))
    return JointTable(attrs, cats, idx[0][keep].astype(np.int64),
                      idx[1:].T[keep].astype(np.int64), c[keep].astype(np.int64))


@functools.cache
def _components():
    from fairaudit.core.plugins import Host

    host = Host.create(entrypoints=False)
    return tuple(host.registry.get("auditor", a).cls() for a in AUDITORS)


def truth(regime: Regime) -> dict[str, float]:
    """The population values of every metric of the judged table."""
    from fairaudit.core.counting_audit import run_counting_auditor

    big = joint_of((regime.cube * 1e8).round().astype(np.int64))
    out = {}
    for comp in _components():
        for r in run_counting_auditor(comp, "seg", big, {regime.attribute: big.table(
                regime.attribute)}, None, min_cell=0, level=0.95):
            out[r.metric] = r.value
    return out


def published_results(release: Release, attribute: str, n_boot: int, seed, *,
                      min_cell: int = 10):
    """The results of the judged table of one release, computed as a published run does."""
    from fairaudit.core.counting_audit import run_counting_auditor

    joint = release.joints["seg"]
    tables = joint.tables()
    if attribute not in tables:
        return []
    boot = release.replicates("seg", n_boot, np.random.default_rng(seed))
    out = []
    for comp in _components():
        out.extend(run_counting_auditor(comp, "seg", joint, {attribute: tables[attribute]},
                                        boot, min_cell=min_cell, level=0.95,
                                        unreleased=release.unreleased("seg"),
                                        **release.interval_options("seg")))
    return out


def release_of(counts: np.ndarray, epsilon: float, domain: str = "public") -> Release:
    return Release([LAB], {"seg": joint_of(counts)},
                   PrivacySpec(publish=True, epsilon=epsilon, domain=domain), {})


def coverage(regime: Regime | str, sims: int, seed: int, n_boot: int = 200) -> dict:
    """Per metric: draws judged, hits, misses below and above, 'unfair' calls, widths."""
    reg = REGIMES[regime] if isinstance(regime, str) else regime
    true = truth(reg)
    rng = np.random.default_rng(seed)
    stats: dict[str, dict] = {m: {"truth": v, "n": 0, "hit": 0, "below": 0, "above": 0,
                                  "unfair": 0, "undefined": 0, "widths": [], "lowers": []}
                              for m, v in true.items()}
    p = reg.cube.reshape(-1)
    for s in range(sims):
        x = rng.multinomial(reg.n, p / p.sum()).reshape(reg.cube.shape)
        rel = release_of(x, reg.epsilon, reg.domain)
        for r in published_results(rel, reg.attribute, n_boot, [seed, s]):
            st = stats.get(r.metric)
            if st is None:
                continue
            if r.ci is None or not np.isfinite(r.value):
                st["undefined"] += 1  # too little data: no interval, no claim
                continue
            st["n"] += 1
            lo, hi = r.ci
            t = st["truth"]
            st["hit"] += lo <= t + 1e-12 and t - 1e-12 <= hi
            st["below"] += t < lo - 1e-12   # the interval lies above the truth
            st["above"] += t > hi + 1e-12
            st["widths"].append(hi - lo)
            st["lowers"].append(lo)
            rule = UNFAIR.get(r.metric)
            if rule is not None:
                end, bound = rule
                st["unfair"] += (hi < bound) if end == "upper" else (lo > bound)
    for st in stats.values():
        n = max(st["n"], 1)
        st["coverage"] = st["hit"] / n
        st["sd"] = float(np.sqrt(st["coverage"] * (1 - st["coverage"]) / n))
        st["unfair_rate"] = st["unfair"] / n
        st["median_width"] = float(np.median(st["widths"])) if st["widths"] else float("nan")
        st["median_lower"] = float(np.median(st["lowers"])) if st["lowers"] else float("nan")
    return stats
