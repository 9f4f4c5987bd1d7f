"""Fairness scores of a labelling, as functions of ``(labels, sensitive)`` and as scikit-learn
scorers.

Every score counts the (group x cluster) table of the rows (:func:`contingency_table`; rows
labelled ``-1`` are noise and left out; a 2-D ``sensitive`` means intersectional groups) and
returns one float:

=========================  =======================================  ==================
function                   definition (``docs/metrics.md``)         better
=========================  =======================================  ==================
``balance_score``          min over clusters of balance(k)          higher (max 1)
``ed_score``               size-weighted mean of Ed_k               lower (min 0)
``wd_score``               size-weighted mean of Wd_k (0/1 ground)  lower (min 0)
``fairness_cce_score``     fairness_CCE (min over clusters)         higher (max 1)
=========================  =======================================  ==================

For model selection, :func:`fairness_scorer` returns a scorer ``scorer(estimator, X, sensitive)``
that labels ``X`` with ``estimator.predict`` and returns the score, negated for lower-is-better
metrics (scikit-learn's ``neg_`` convention), so ``GridSearchCV(est, grid,
scoring=fairness_scorer("ed")).fit(X, S, sensitive=S)`` maximises fairness (``y`` = the groups
the scorer reads; ``sensitive=`` the groups ``fit`` reads). With ``make_scorer`` keep
scikit-learn's ``(y_true, y_pred)`` order: ``make_scorer(lambda s, lab: ed_score(lab, s),
greater_is_better=False)``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from fairaudit.metrics.counting import balance_min, contingency_table, ed, fairness_cce, wd

__all__ = [
    "SCORES",
    "balance_score",
    "ed_score",
    "fairness_cce_score",
    "fairness_scorer",
    "wd_score",
]


def _table(labels: ArrayLike, sensitive: ArrayLike) -> np.ndarray:
    lab = np.asarray(labels)
    if lab.ndim != 1:
        raise ValueError(f"The 'labels' argument must be 1-D; got shape {lab.shape}.")
    s = np.asarray(sensitive)
    if s.shape[:1] != lab.shape:
        raise ValueError(
            f"The 'sensitive' argument must have one value (or row) per label ({lab.shape[0]}); "
            f"got shape {s.shape}."
        )
    t = contingency_table(s, lab)
    if t.counts.size == 0:
        raise ValueError("Every row is noise (label -1): there is no cluster to score.")
    return t.counts


def balance_score(labels: ArrayLike, sensitive: ArrayLike) -> float:
    """Balance of the labelling: min over clusters k of min over groups g of
    min(r_g / r_g(k), r_g(k) / r_g) (0 when a group is absent from a cluster). Higher is fairer."""
    return float(balance_min(_table(labels, sensitive)))


def ed_score(labels: ArrayLike, sensitive: ArrayLike) -> float:
    """Size-weighted mean over clusters of ||P_k - P_X||_2 (FairKM's average). Lower is fairer."""
    return float(ed(_table(labels, sensitive)))


def wd_score(labels: ArrayLike, sensitive: ArrayLike) -> float:
    """Size-weighted mean over clusters of the total-variation distance 1/2 ||P_k - P_X||_1
    (Wasserstein with the 0/1 ground metric). Lower is fairer."""
    return float(wd(_table(labels, sensitive)))


def fairness_cce_score(labels: ArrayLike, sensitive: ArrayLike) -> float:
    """fairness_CCE: min over clusters k and groups i of min(c g_i(k), 1 / (c g_i(k))), with
    g_i(k) = N[i, k] / |G_i| and c clusters (FCE Definition 3). Higher is fairer."""
    return float(fairness_cce(_table(labels, sensitive)))


SCORES: dict[str, tuple[Callable[[ArrayLike, ArrayLike], float], bool]] = {
    "balance": (balance_score, True),
    "ed": (ed_score, False),
    "wd": (wd_score, False),
    "fairness_cce": (fairness_cce_score, True),
}
"""name -> (score function, greater is better)."""


def fairness_scorer(metric: str) -> Callable[[Any, ArrayLike, ArrayLike], float]:
    """A scikit-learn scorer ``scorer(estimator, X, sensitive) -> float`` for ``metric`` (one of
    :data:`SCORES`): ``estimator.predict(X)`` (or ``fit_predict`` when it has no ``predict``)
    labels the rows; lower-is-better metrics are negated, so greater is always better."""
    if metric not in SCORES:
        raise ValueError(f"The 'metric' argument must be one of {sorted(SCORES)}; got {metric!r}.")
    func, greater = SCORES[metric]
    sign = 1.0 if greater else -1.0

    def scorer(estimator: Any, X: ArrayLike, sensitive: ArrayLike) -> float:
        if hasattr(estimator, "predict"):
            labels = estimator.predict(X)
        else:
            labels = estimator.fit_predict(X)
        return sign * func(labels, sensitive)

    scorer.__name__ = f"{'' if greater else 'neg_'}{metric}_scorer"
    return scorer
