"""k by silhouette passes over k whose k-means labelling is degenerate (issue 13).

On heavy-tailed data the best silhouette is often "a handful of extreme rows against the rest":
a labelling that splits no one, which the report then flags as degenerate. ``select_k_silhouette``
uses the report's rules (fairaudit/core/fit_quality.py) on the sample and picks the best k among the rest.
"""

from __future__ import annotations

import numpy as np
import pytest

from fairaudit.cluster.baselines import degenerate_reason, select_k_silhouette


def _heavy_tailed(seed: int, n: int = 1500) -> np.ndarray:
    """Three overlapping blobs plus 0.6 % of rows at a huge distance (like capital-gain 99,999)."""
    rng = np.random.default_rng(seed)
    centres = np.array([[0.0, 0.0], [2.5, 0.0], [1.2, 2.2]])
    X = centres[rng.integers(0, 3, n)] + rng.normal(0, 0.7, (n, 2))
    far = rng.choice(n, size=n * 6 // 1000, replace=False)
    X[far] += np.array([60.0, 60.0])
    return (X - X.mean(0)) / X.std(0)


def test_degenerate_reason_hand_cases():
    sil = np.zeros(100)
    dominant = np.r_[np.zeros(95, int), np.ones(5, int)]
    assert degenerate_reason(dominant, sil, max_share=0.9, min_share=0.01, separated=0.5) \
        == "dominant_cluster"
    # 91 % is dominant, 90 % exactly is not (strictly more than the share)
    assert degenerate_reason(np.r_[np.zeros(90, int), np.ones(10, int)], sil, max_share=0.9,
                             min_share=0.01, separated=0.5) is None
    tiny = np.r_[np.zeros(60, int), np.ones(39, int), np.full(1, 2)]
    assert degenerate_reason(tiny, sil, max_share=0.9, min_share=0.02, separated=0.5) \
        == "tiny_cluster"
    # the same tiny cluster, well separated (its members' silhouette 0.8): forced by the data
    sep = sil.copy()
    sep[tiny == 2] = 0.8
    assert degenerate_reason(tiny, sep, max_share=0.9, min_share=0.02, separated=0.5) is None


@pytest.mark.parametrize("seed", range(5))
def test_heavy_tail_does_not_win_k(seed):
    X = _heavy_tailed(seed)
    plain = select_k_silhouette(X, range(2, 7), random_state=seed, max_share=None)
    sel = select_k_silhouette(X, range(2, 7), random_state=seed)
    # without the rule, "extreme rows vs the rest" wins at k = 2 (silhouette close to 1)
    assert plain.k == 2
    assert dict(sel.degenerate).get(2) == "dominant_cluster"
    assert sel.k != 2 and not sel.all_degenerate
    # same scores either way; the chosen k is the best among the non-degenerate ones
    assert sel.scores == plain.scores
    usable = [s for s in sel.scores if s[0] not in dict(sel.degenerate)]
    assert sel.k == max(usable, key=lambda s: (s[1], -s[0]))[0]


def test_all_degenerate_falls_back_to_best_score():
    rng = np.random.default_rng(0)
    X = np.r_[rng.normal(0, 1, (995, 2)), rng.normal(500, 1, (5, 2))]
    sel = select_k_silhouette(X, [2], random_state=0)
    assert sel.k == 2 and sel.all_degenerate and sel.degenerate == ((2, "dominant_cluster"),)


def test_balanced_data_unchanged():
    rng = np.random.default_rng(1)
    X = np.r_[rng.normal(0, 0.3, (300, 2)), rng.normal(5, 0.3, (300, 2)),
              rng.normal((0, 5), 0.3, (300, 2))]
    plain = select_k_silhouette(X, range(2, 7), random_state=3, max_share=None)
    sel = select_k_silhouette(X, range(2, 7), random_state=3)
    assert sel.k == plain.k == 3 and sel.degenerate == ()


def test_kmeans_component_reports_passed_over_k():
    """Through the ``kmeans`` component (CLI / chain / API): the extreme-rows k is passed over,
    said in the note and marked in ``extras_['k_selection']``."""
    import polars as pl

    from fairaudit.api import audit

    X = _heavy_tailed(0, n=1200)
    rng = np.random.default_rng(0)
    frame = pl.DataFrame({"a": X[:, 0], "b": X[:, 1],
                          "sex": rng.choice(["F", "M"], size=X.shape[0])})
    run = audit(frame, sensitive=["sex"], cluster=["kmeans"], seed=0, bootstrap=0,
                audit=["balance"])
    lab = next(lab for lab in run.doc["labellings"] if lab["name"] == "kmeans")
    assert lab["n_clusters"] != 2
    assert not any(w["code"] == "dominant_cluster" for w in lab.get("warnings") or ())
    notes = " ".join(run.doc.get("notes") or ()) + " ".join(lab.get("notes") or ())
    assert "passing over degenerate k: 2 (dominant cluster)" in notes
