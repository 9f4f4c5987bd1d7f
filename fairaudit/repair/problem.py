"""The repair's problem on counts: the targets, the attribute tables as the audit judges them,
the problem and its solution (typed records), and the check of a table against the targets
with the audit's own float formulas (docs/repair.md).

Layer-1 code: numpy only (and fairaudit.metrics), no host, no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fairaudit.repair.spec import LINEAR_METRICS

__all__ = ["CountProblem", "CountSolution", "Infeasible", "Scope", "Target", "evaluate",
           "meets", "metric_value", "scope_table", "structure_ok", "transport_plan"]


@dataclass(frozen=True)
class Target:
    """``metric >= value`` (``metric <= value`` for wd, wd_max) on one attribute's table."""

    metric: str
    value: float
    attribute: str
    groups: tuple[int, ...] | None = None
    """Only these judged groups' rows (the diagnosis of an infeasible target); None = all."""


@dataclass(frozen=True)
class Scope:
    """One attribute's table as the audit judges it: the groups with at least ``min_cell``
    people (smaller groups are left out of its metrics, so out of the targets)."""

    attribute: str
    group_of_cell: np.ndarray
    """(S,) the judged group of each joint cell, -1 when its group is too small to judge."""
    groups: tuple[str, ...]
    left_out: tuple[str, ...] = ()
    """Groups below ``min_cell`` (not judged by the audit, not constrained here)."""


@dataclass(frozen=True)
class CountProblem:
    """Everything the program needs: the counts, the attribute tables, the targets."""

    counts: np.ndarray
    """(S, K) int64: people of joint cell s in segment k (eligible rows only)."""
    scopes: tuple[Scope, ...]
    targets: tuple[Target, ...]
    keep_sizes: float | None = None
    """Each segment's size within +-keep_sizes of its current size (a share, e.g. 0.05)."""

    @property
    def shape(self) -> tuple[int, int]:
        s, k = self.counts.shape
        return int(s), int(k)

    def scope(self, attribute: str) -> Scope:
        for sc in self.scopes:
            if sc.attribute == attribute:
                return sc
        raise KeyError(attribute)


class Infeasible(Exception):
    """No repair meets the targets; ``reason`` says which group makes it so."""

    def __init__(self, reason: str, *, relaxation_feasible: bool | None = None):
        super().__init__(reason)
        self.reason = reason
        self.relaxation_feasible = relaxation_feasible


@dataclass(frozen=True)
class CountSolution:
    """The repaired counts and the price."""

    counts: np.ndarray
    """(S, K) int64: the new counts M."""
    moves: int
    """People who change segment: sum of max(N - M, 0)."""
    lp_bound: float
    """The LP relaxation's optimum: no repair, integer or not, moves fewer people."""
    optimal: bool
    """The integer program was solved to proven optimality."""
    gap: float
    """Relative gap the solver proved (0 when optimal)."""
    margin: float = 0.0
    """Slack (people) the target rows needed for the solution to pass the float check."""
    lp_counts: np.ndarray | None = field(default=None, repr=False)
    """The LP relaxation's (fractional) counts."""
    seconds: float = 0.0


# ---------------------------------------------------------------------- checking a table
def scope_table(counts: np.ndarray, sc: Scope) -> np.ndarray:
    """The judged groups x segments table of ``sc`` from joint-cell counts (S, K)."""
    judged = sc.group_of_cell >= 0
    t = np.zeros((len(sc.groups), counts.shape[1]), dtype=np.int64)
    np.add.at(t, sc.group_of_cell[judged], counts[judged])
    return t


def metric_value(table: np.ndarray, metric: str) -> float:
    """The audit's value of ``metric`` on a groups x segments table (empty segments dropped,
    as the audit drops them), with the audit's own functions."""
    from fairaudit.metrics import counting

    t = table[:, table.sum(axis=0) > 0]
    t = t[t.sum(axis=1) > 0]
    if metric == "balance":
        return float(counting.balance_min(t))
    if metric == "balance_prime":
        return float(counting.balance_prime(t))
    if metric == "fairness_cce":
        return float(counting.fairness_cce(t))
    if metric == "cce":
        return float(counting.cce(t))
    if metric == "wd":
        return float(counting.wd(t, ground="zero-one", how="weighted-mean"))
    if metric == "wd_max":
        return float(counting.wd(t, ground="zero-one", how="max"))
    raise KeyError(metric)


def meets(value: float, target: Target) -> bool:
    if LINEAR_METRICS[target.metric] == "higher":
        return value >= target.value
    return value <= target.value


def evaluate(problem: CountProblem, counts: np.ndarray) -> list[dict[str, Any]]:
    """Every target's value on ``counts`` (S, K), and whether it is met — by the audit's
    float formulas, so "met" here is "met" in the after-audit."""
    out = []
    for t in problem.targets:
        v = metric_value(scope_table(counts, problem.scope(t.attribute)), t.metric)
        out.append({"metric": t.metric, "attribute": t.attribute, "target": t.value,
                    "value": v, "met": meets(v, t)})
    return out


def structure_ok(problem: CountProblem, M: np.ndarray) -> bool:
    """Every segment keeps judged people in every table; sizes within keep_sizes."""
    for sc in problem.scopes:
        if (scope_table(M, sc).sum(axis=0) < 1).any():
            return False
    if problem.keep_sizes is not None:
        size0 = problem.counts.sum(axis=0)
        size = M.sum(axis=0)
        d = problem.keep_sizes
        lo = np.ceil((1 - d) * size0 - 1e-9)
        hi = np.floor((1 + d) * size0 + 1e-9)
        if ((size < lo) | (size > hi)).any():
            return False
    return True


def transport_plan(surplus: Sequence[int], deficit: Sequence[int]) -> np.ndarray:
    """A plan moving ``surplus[k]`` people out of segment k into segments with a
    ``deficit[l]`` (equal totals): the north-west corner rule, segments in order."""
    sur = np.asarray(surplus, dtype=np.int64).copy()
    dem = np.asarray(deficit, dtype=np.int64).copy()
    if sur.sum() != dem.sum():
        raise ValueError("surplus and deficit totals differ")
    K = sur.size
    plan = np.zeros((K, K), dtype=np.int64)
    i = j = 0
    while i < K and j < K:
        if sur[i] == 0:
            i += 1
            continue
        if dem[j] == 0:
            j += 1
            continue
        q = min(sur[i], dem[j])
        plan[i, j] += q
        sur[i] -= q
        dem[j] -= q
    return plan
