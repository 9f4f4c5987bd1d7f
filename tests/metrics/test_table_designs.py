"""Issue 40: the intervals on real-table designs (public tables shipped with fairaudit treated
as populations, 20 % of the rows drawn without replacement; benchmarks/table_designs.py).
The full runs (200 draws per design) are in docs/metrics.md ("Real tables"); these are short
versions with an acceptance band from the binomial standard deviation."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "table_designs.py"


@pytest.fixture(scope="module")
def td():
    spec = importlib.util.spec_from_file_location("fairaudit_bench_table_designs", BENCH)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # its dataclasses look their module up there
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.slow
def test_a_designs_draw_is_audited_as_the_default_audit_does(td):
    """The harness computes on tables: the same interval as ``fairaudit.audit(sub,
    sensitive=[a], labels=l)`` on the draw's rows (groups sorted, the attribute's own
    bootstrap stream), to the last bit."""
    import polars as pl

    import fairaudit
    from fairaudit.core.contingency import attribute_stream
    from fairaudit.metrics import intervals as I

    P, groups = td.population(td.DESIGNS["adult-race2-edu10"])
    rng = np.random.default_rng(5)
    D = rng.multivariate_hypergeometric(P.ravel(), int(round(0.2 * P.sum()))).reshape(P.shape)
    grp = [groups[g] for g in range(D.shape[0]) for k in range(D.shape[1]) for _ in range(D[g, k])]
    seg = [k for g in range(D.shape[0]) for k in range(D.shape[1]) for _ in range(D[g, k])]
    run = fairaudit.audit(pl.DataFrame({"grp": grp, "seg": seg}), sensitive=["grp"],
                          labels="seg")
    res = run.results_for(metric="balance", attribute="grp")[0]
    R = td.replicates(D, td.N_BOOT, attribute_stream(0, "seg", "grp"))
    keep = D.sum(axis=1) >= td.MIN_CELL
    cols = D[keep].sum(axis=0) > 0
    iv = I.balance_interval(D[keep][:, cols], td.LEVEL, R[:, keep][:, :, cols])
    assert res["ci"] == [iv.lower, min(iv.upper, 1.0)]
    assert res["detail"]["bias"]["corrected"] == pytest.approx(iv.bias_corrected.value,
                                                             rel=1e-12)


DRAWS = 80
# three binomial standard deviations of a coverage from 80 draws at 95 %: 7.3 points
FLOOR = 0.95 - 3 * np.sqrt(0.95 * 0.05 / DRAWS)


@pytest.mark.slow
@pytest.mark.parametrize("design", ["adult-sex-age10", "adult-age3-hours10",
                                    "bank-marital-poutcome", "adversarial-sex-age10"])
def test_real_table_designs_cover_and_stay_inside_the_conservative_interval(td, design):
    """Coverage of the population's value at least 95 % less three binomial sds of 80 draws
    (the full figures: 200 draws, docs/metrics.md), for balance, fairness_CCE and Balance′;
    every calibrated interval inside the conservative one; the bias-corrected value between
    the estimate and the upper end."""
    res = td.run_design(design, DRAWS, seed=40)
    for metric, r in res.items():
        a = np.asarray(r["rows"])
        est, lo, hi, clo, chi, mu = a.T
        assert np.all(clo <= lo + 1e-12) and np.all(hi <= chi + 1e-12), (design, metric)
        assert np.all(est - 1e-12 <= mu) and np.all(mu <= hi + 1e-12), (design, metric)
        s = td.summary(r["truth"], r["rows"], metric)
        assert s["coverage"] >= FLOOR, (design, metric, s)
        assert s["width"] <= s["conservative_width"] + 1e-12, (design, metric, s)
