"""The same people under another source name, recognised by what an earlier release published
(docs/privacy.md, "The ledger"): its noisy count cube.

The sketch of :mod:`fairaudit.privacy.fingerprint` needs a near-unique column (an identifier).
A table of categories alone — the sensitive columns and a labels column — has none; a nightly
job that names each night's source after its date would then start a fresh budget every night.
But every release of a labels audit published the intersection's group x cluster counts, with
noise of a known variance v per cell. For the same people (a copy, a night with a few people
more or fewer) the residuals r = published - exact over those cells are that noise: the sum of
r² is about v per cell. For other people — even a sample of the same population, of the same
size — it is about twice the number of rows more (each cell's count differs by its sampling
spread), so the two are told apart once the table is large against the noise.

**Detects**: a table whose intersection x labels counts are within the noise of a release
recorded under another source, for the same number of sensitive attributes (names may differ:
the groups' values are compared), when the table is large enough to tell (other people of the same
population would pass the threshold with probability at most :data:`FALSE_ALARM`). **Does not
detect**: another question (other labels or attributes), a table too small to tell, changes of
more than a few people per cell, clusterings fitted in the run, private-domain releases (their
small cells are not published). **False alarms**: two populations whose counts agree cell by
cell to within the noise — e.g. synthetic tables built with the same exact counts; name them
one source, or keep them in separate ledgers.

The comparison reads the exact counts of the new table: its outcome (refused or not) is the
publisher's to see, like a budget refusal; nothing of it is published.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

INTERSECTION_SEP = "|"
MARGIN = 4.0
"""The threshold: the same people's expected sum of squared residuals plus this many of its
standard deviations (and a few people changed)."""
CHANGED = 8
"""People more or fewer that the threshold allows for (a night's churn)."""
FALSE_ALARM = 1e-4
"""The check decides only when other people of the same population would fall below the
threshold with at most this probability (a Chernoff bound, loose: in 15,000 simulated pairs of
two samples of one population, tests/test_privacy_nearcopy.py and docs/privacy.md, none was
taken for the same people)."""


def exact_cube(lf: Any, sensitive: Sequence[str], labels: str) -> dict[tuple[str, str], int]:
    """``{(group, cluster): count}`` of the intersection of ``sensitive`` by ``labels``, as a
    release names them (values as text joined by ``|``; rows with a null or a noise label -1
    left out, as in the published composition)."""
    import polars as pl

    g = (lf.select([pl.col(c).cast(pl.String).alias(f"s{i}") for i, c in enumerate(sensitive)]
                   + [pl.col(labels).alias("lab")])
         .drop_nulls().filter(pl.col("lab").cast(pl.Int64, strict=False) != -1)
         .group_by([f"s{i}" for i in range(len(sensitive))] + ["lab"]).len().collect())
    return {(INTERSECTION_SEP.join(r[:-2]), str(r[-2])): int(r[-1]) for r in g.iter_rows()}


def released_cube(doc: Mapping[str, Any], n_attributes: int,
                  ) -> tuple[dict[tuple[str, str], int], float] | None:
    """The intersection x clusters table a release published for ``n_attributes`` sensitive
    attributes, and its noise variance per cell; None when it published none (another
    question, a private domain, a fitted clustering)."""
    from fairaudit.privacy.dp import discrete_laplace_variance

    p = doc.get("privacy")
    labs = doc.get("labellings")
    if not isinstance(p, dict) or not isinstance(labs, list) or len(labs) != 1 or \
            not isinstance(labs[0], dict) or not isinstance(labs[0].get("composition"), dict):
        return None
    scale = p.get("noise_scale")
    if p.get("mode") != "dp" or not isinstance(scale, int | float) or not scale > 0 or \
            p.get("delta") or p.get("threshold") is not None or \
            labs[0].get("origin", "column") != "column":
        return None
    tables = [t for k, t in labs[0]["composition"].items()
              if isinstance(k, str) and k.count(INTERSECTION_SEP) == n_attributes - 1]
    if len(tables) != 1:
        return None
    t = tables[0]
    try:  # a stored document is only checked to be an object: read it defensively
        cube = {(str(g), str(c)): int(n)
                for g, row in zip(t["groups"], t["counts"], strict=True)
                for c, n in zip(t["clusters"], row, strict=True)}
    except (KeyError, TypeError, ValueError):
        return None
    return cube, discrete_laplace_variance(float(scale)) + 1 / 12  # + the rounding


def other_people_below(threshold: float, spread: Sequence[float]) -> float:
    """A bound on the probability that other people (a sample of the same population) have a
    sum of squared residuals at most ``threshold``: sum_c w_c Z_c² with Z_c standard normal and
    w_c = ``spread`` (each cell's sampling variance of the difference of two counts; the noise
    only adds to it). Chernoff: P(S <= t) <= min over l > 0 of exp(l t) prod (1 + 2 l w_c)^-1/2."""
    import numpy as np

    w = np.asarray([x for x in spread if x > 0], dtype=np.float64)
    if not w.size:
        return 1.0
    lam = np.geomspace(1e-6 / w.max(), 1e3 / w.min(), 400)[:, None]
    log_bound = lam[:, 0] * threshold - 0.5 * np.log1p(2 * lam * w).sum(axis=1)
    return float(min(1.0, np.exp(log_bound.min())))


def within_noise(exact: Mapping[tuple[str, str], int], released: Mapping[tuple[str, str], int],
                 variance: float) -> bool:
    """Whether ``exact`` looks like the people ``released`` was made from (see the module).

    Same people: each residual is the noise (variance v, kurtosis about 6), so the sum of
    squares has mean m v and variance about 5 m v² over m cells; the threshold is that mean plus
    :data:`MARGIN` standard deviations and :data:`CHANGED` people. Other people drawn from the
    same population (the hardest case) add each cell's sampling spread 2 n_c (1 - p_c); the
    check decides only when they would pass the threshold but with probability
    :data:`FALSE_ALARM`."""
    cells = set(exact) | set(released)
    rows = sum(exact.values())
    if not cells or not rows:
        return False
    m = len(cells)
    ss = sum((released.get(c, 0) - exact.get(c, 0)) ** 2 for c in cells)
    threshold = m * variance + MARGIN * math.sqrt(5 * m) * variance + CHANGED * (1 + variance)
    spread = [2 * n * (1 - n / rows) for n in exact.values()]
    return ss <= threshold and other_people_below(threshold, spread) <= FALSE_ALARM
