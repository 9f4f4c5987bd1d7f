"""Real-table designs for the intervals of balance, fairness_CCE and Balance′ (issue 40): a
public table shipped with fairaudit is the population, 20 % of its rows are drawn without
replacement, and each draw is audited as ``fairaudit.audit(sub, sensitive=[a], labels=l)``
does by default (groups below ``--min-cell`` 10 left out, 200 bootstrap replicates of the
attribute's table from its own stream, 95 % intervals). Run through
``benchmarks/ci_coverage.py --tables``; the slow test is
``tests/metrics/test_table_designs.py``.

A draw of 20 % of the rows without replacement is a multivariate hypergeometric draw of the
population's group x segment cells, so no row is touched after the population table is built.
Per design and metric: the population value, coverage, misses below / above, median width,
the **oracle width** (the 2.5-97.5 % spread of the plug-in's error, estimate - population
value, over the same draws: the width an interval would need if it knew the sampling
distribution) and their ratio, the median estimate and bias-corrected value, and the share of
draws the interval decides against the four-fifths bound 0.8.

Segmentations are the tables' own columns (job, relationship, ...) or deciles / quintiles of a
numeric column by rank (ties broken by row order), as a user's score deciles would be.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "examples" / "data"
FRACTION = 0.2
MIN_CELL = 10  # fairaudit's default --min-cell
N_BOOT = 200  # fairaudit's default --bootstrap
LEVEL = 0.95
BOUND = 0.8  # the four-fifths rule: the verdict bound of balance (and fairness_cce)


@dataclasses.dataclass(frozen=True)
class Design:
    name: str
    table: str
    attribute: str
    labels: str
    note: str
    adversarial: bool = False
    """The population's cells of its smallest group replaced by one value, the population's
    minimum (q in {t, 1/t}): every such cell ties (an attack on the tie rule)."""


def _col(name: str, expr: Callable[[Any], Any]) -> tuple[str, Callable[[Any], Any]]:
    return name, expr


def _derived() -> dict[str, list[tuple[str, Callable[[Any], Any]]]]:
    import polars as pl

    def rank_bins(col: str, q: int):
        return (pl.col(col).rank("ordinal").floordiv(pl.len() / q + 1e-9)
                .cast(pl.Int64).alias(f"{col}_q{q}"))

    race3 = (pl.when(pl.col("race").is_in(["White", "Black"])).then(pl.col("race"))
             .otherwise(pl.lit("Other")).alias("race3"))
    race2 = (pl.when(pl.col("race") == "White").then(pl.lit("White"))
             .otherwise(pl.lit("non-White")).alias("race2"))
    age3 = (pl.when(pl.col("age") < 30).then(pl.lit("<30")).when(pl.col("age") < 50)
            .then(pl.lit("30-49")).otherwise(pl.lit("50+")).alias("age3"))
    age4 = (pl.when(pl.col("age") < 30).then(pl.lit("<30")).when(pl.col("age") < 45)
            .then(pl.lit("30-44")).when(pl.col("age") < 60).then(pl.lit("45-59"))
            .otherwise(pl.lit("60+")).alias("age4"))
    return {
        "adult": [rank_bins("age", 10), rank_bins("age", 5), rank_bins("hours-per-week", 10),
                  rank_bins("education-num", 10), rank_bins("fnlwgt", 10), race3, race2, age3],
        "bank": [rank_bins("duration", 10), rank_bins("age", 10), rank_bins("balance", 10),
                 age4],
    }


TABLES = {"adult": DATA / "adult_sample.parquet", "bank": DATA / "bank_sample.parquet"}
DESIGNS = {d.name: d for d in [
    Design("adult-sex-age10", "adult", "sex", "age_q10",
           "2 groups (34 % women) x 10 age deciles: about 27 women per decile"),
    Design("adult-sex-hours10", "adult", "sex", "hours-per-week_q10",
           "2 groups x 10 deciles of weekly hours"),
    Design("adult-race2-edu10", "adult", "race2", "education-num_q10",
           "White / non-White (14 %) x 10 education deciles: about 11 per cell"),
    Design("adult-race3-hours10", "adult", "race3", "hours-per-week_q10",
           "3 groups (4 % 'Other') x 10 deciles: cells of 3-4 people"),
    Design("adult-age3-hours10", "adult", "age3", "hours-per-week_q10",
           "3 age groups x 10 deciles: one cell sets the minimum"),
    Design("adult-race3-age5", "adult", "race3", "age_q5",
           "3 groups x 5 age quintiles"),
    Design("adult-race2-relationship", "adult", "race2", "relationship",
           "2 groups x 6 household roles (one of 2.5 %)"),
    Design("adult-sex-fnlwgt10", "adult", "sex", "fnlwgt_q10",
           "2 groups x 10 deciles of the census weight: near independence"),
    Design("bank-marital-duration10", "bank", "marital", "duration_q10",
           "3 groups (12 % divorced) x 10 call-duration deciles"),
    Design("bank-marital-poutcome", "bank", "marital", "poutcome",
           "3 groups x 4 outcomes of the last campaign (small cells)"),
    Design("bank-education-age10", "bank", "education", "age_q10",
           "4 groups (4 % 'unknown') x 10 age deciles"),
    Design("bank-age4-duration10", "bank", "age4", "duration_q10",
           "4 age groups (4 % over 60) x 10 duration deciles"),
    Design("adversarial-sex-age10", "adult", "sex", "age_q10",
           "adult-sex-age10 with every women's cell at the minimum (an attack)", True),
    Design("adversarial-race2-edu10", "adult", "race2", "education-num_q10",
           "adult-race2-edu10 with every non-White cell at the minimum (an attack)", True),
]}
DEFAULT = [d for d in DESIGNS if not d.startswith("adversarial")]
METRICS = ("balance", "fairness_cce", "balance_prime")


def population(design: Design) -> tuple[np.ndarray, tuple[str, ...]]:
    """The population's group x segment table (groups sorted by name, segments by value, as
    the host lays out a table) and its group names."""
    import polars as pl

    df = pl.read_parquet(TABLES[design.table]).with_columns(_derived()[design.table])
    df = df.filter(pl.col(design.attribute).is_not_null() & pl.col(design.labels).is_not_null())
    groups = tuple(sorted(df[design.attribute].cast(pl.Utf8).unique().to_list()))
    segs = sorted(df[design.labels].unique().to_list())
    g = {v: i for i, v in enumerate(groups)}
    k = {v: i for i, v in enumerate(segs)}
    P = np.zeros((len(groups), len(segs)), dtype=np.int64)
    for a, b in zip(df[design.attribute].cast(pl.Utf8).to_list(), df[design.labels].to_list(),
                    strict=True):
        P[g[a], k[b]] += 1
    return (adversarial(P) if design.adversarial else P), groups


def adversarial(P: np.ndarray) -> np.ndarray:
    """Every cell of the smallest group at the population's minimum t of min(q, 1/q): q = 1/t
    on the segments where its share is highest, t elsewhere, one segment adjusted so that the
    group's mean q stays 1; segment sizes and the other groups' mix within segments kept."""
    P = np.asarray(P, dtype=np.float64)
    n, cols, rows = P.sum(), P.sum(axis=0), P.sum(axis=1)
    q = P * n / np.outer(rows, cols)
    t = float(np.where(q > 0, np.minimum(q, 1 / np.where(q > 0, q, 1)), 0).min())
    g = int(np.argmin(rows))
    w = cols / n
    qq = np.full(P.shape[1], t)
    order = np.argsort(-q[g])
    for k in order:
        trial = qq.copy()
        trial[k] = 1 / t
        if (w * trial).sum() <= 1:
            qq = trial
    k = next(k for k in order if qq[k] == t)
    qq[k] = t + (1 - (w * qq).sum()) / w[k]
    Q = P.copy()
    Q[g] = np.round(qq * rows[g] * cols / n)
    others = [h for h in range(P.shape[0]) if h != g]
    Q[others] = np.round(P[others] / P[others].sum(axis=0, keepdims=True) * (cols - Q[g]))
    return Q.astype(np.int64)


def replicates(D: np.ndarray, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """Multinomial replicates of the drawn table as the host draws them
    (:func:`fairaudit.core.contingency.resample_attribute`: one multinomial over the observed
    (segment, group) classes in that order), B x groups x segments."""
    flat = D.T.ravel()  # (segment, group) order
    present = np.flatnonzero(flat > 0)
    n = int(flat.sum())
    out = np.zeros((n_boot, flat.size), dtype=np.int64)
    out[:, present] = rng.multinomial(n, flat[present] / n, size=n_boot)
    return out.reshape(n_boot, D.shape[1], D.shape[0]).transpose(0, 2, 1)


@dataclasses.dataclass(frozen=True)
class Draw:
    table: np.ndarray
    """The judged table (groups of at least MIN_CELL people, non-empty segments)."""
    replicates: np.ndarray
    kept_groups: tuple[int, ...]
    kept_segments: tuple[int, ...]


def draws(P: np.ndarray, count: int, seed: int, n_boot: int = N_BOOT,
          attribute: str = "a") -> Iterator[Draw]:
    """``count`` audited draws of FRACTION of the population's rows, seeded."""
    from fairaudit.core.contingency import attribute_stream

    rng = np.random.default_rng(seed)
    m = int(round(FRACTION * P.sum()))
    for i in range(count):
        D = rng.multivariate_hypergeometric(P.ravel(), m).reshape(P.shape)
        keep = D.sum(axis=1) >= MIN_CELL
        if keep.sum() < 2:
            continue
        cols = D[keep].sum(axis=0) > 0
        R = replicates(D, n_boot, attribute_stream(seed, f"draw{i}", attribute))
        yield Draw(D[keep][:, cols], R[:, keep][:, :, cols], tuple(np.flatnonzero(keep)),
                   tuple(np.flatnonzero(cols)))


def _metric_fns() -> dict[str, tuple[Callable[..., Any], Callable[..., Any]]]:
    from fairaudit.metrics import counting as C
    from fairaudit.metrics import intervals as I

    return {"balance": (C.balance_min, I.balance_interval),
            "fairness_cce": (C.fairness_cce, I.fairness_cce_interval),
            "balance_prime": (C.balance_prime, I.balance_prime_interval)}


def run_design(name: str, count: int, seed: int = 2026, n_boot: int = N_BOOT,
               metrics: Sequence[str] = METRICS) -> dict[str, dict[str, Any]]:
    """Per metric: {"truth", "rows": [(estimate, lower, upper, cons_lower, cons_upper,
    bias_corrected), ...]} over ``count`` draws of design ``name``."""
    design = DESIGNS[name]
    P, _ = population(design)
    fns = _metric_fns()
    out: dict[str, dict[str, Any]] = {
        m: {"truth": float(fns[m][0](P[None].astype(np.float64))[0]), "rows": []}
        for m in metrics}
    for d in draws(P, count, seed, n_boot, design.attribute):
        T = d.table.astype(np.float64)
        for m in metrics:
            value, interval = fns[m]
            est = float(value(T[None])[0])
            cal, con = interval(d.table, LEVEL, d.replicates), interval(d.table, LEVEL)
            corrected = getattr(cal, "bias_corrected", None)  # (an older fairaudit has none)
            mu = corrected.value if corrected is not None else est
            out[m]["rows"].append((est, cal.lower, cal.upper, con.lower, con.upper, mu))
    return out


def summary(truth: float, rows: Sequence[Sequence[float]], metric: str) -> dict[str, float]:
    """Coverage, misses, widths (the interval capped at the metric's range [0, 1], as the
    host reports it), the oracle width and ratio, medians, and the decided share."""
    a = np.asarray(rows, dtype=np.float64)
    est, lo, hi, clo, chi, mu = a.T
    hi, chi = np.minimum(hi, 1.0), np.minimum(chi, 1.0)
    err = est - truth
    oracle = float(np.quantile(err, 0.975) - np.quantile(err, 0.025))
    width = float(np.median(hi - lo))
    decided = (lo >= BOUND) | (hi < BOUND) if metric != "balance_prime" else np.zeros(len(a))
    return {
        "truth": truth, "draws": float(len(a)),
        "coverage": float(np.mean((lo <= truth) & (truth <= hi))),
        "below": float(np.mean(lo > truth)), "above": float(np.mean(hi < truth)),
        "width": width, "oracle": oracle, "ratio": width / oracle if oracle > 0 else np.nan,
        "conservative_coverage": float(np.mean((clo <= truth) & (truth <= chi))),
        "conservative_width": float(np.median(chi - clo)),
        "estimate": float(np.median(est)), "corrected": float(np.median(mu)),
        "corrected_at_or_above": float(np.mean(mu >= truth)),
        "decided": float(np.mean(decided)),
    }
