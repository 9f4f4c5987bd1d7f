"""The counting step's fast paths for many clusters (issue 12, item 6), each against the plain
computation it replaces:

* replicate tables built for the judged rows and columns only == the whole stack, sliced;
* the shared, read-only replicate tables of a labelling == fresh ones;
* the built-in ``compute_batch`` in blocks, and with ``metrics=`` == the whole-stack code
  before the change (verbatim below), bit for bit;
* one ``breakdown`` call filed by metric == ``breakdown_for`` metric by metric;
* a whole counting step on many small clusters: the same results whichever path it takes.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from fairaudit_builtins.auditors import BalanceAuditor, CapacityAuditor, DistributionAuditor
from hypothesis import given, settings
from hypothesis import strategies as st

from fairaudit.core.components import CountingAuditor, Direction, MetricSpec
from fairaudit.core.contingency import BootstrapReplicates, joint_from_frame, resample_joint
from fairaudit.core.counting_audit import _breakdown_by_metric, judgeable, run_counting_auditor
from fairaudit.metrics import counting


def _frame(seed: int, rows: int, clusters: int, noise: float = 0.05) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    seg = rng.integers(0, clusters, rows)
    seg[rng.random(rows) < noise] = -1
    sex = rng.choice(["f", "m"], rows, p=[0.4, 0.6])
    race = rng.choice(["a", "b", "c", "d", "e"], rows, p=[0.7, 0.12, 0.1, 0.03, 0.05])
    return pl.DataFrame({"seg": seg, "sex": sex, "race": race})


def _joint(seed: int, rows: int = 600, clusters: int = 200):
    return joint_from_frame(_frame(seed, rows, clusters), label="seg", sensitive=["sex", "race"])


# ------------------------------------------------------------------------------ replicates
@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(20, 400), st.integers(1, 120))
def test_replicate_tables_of_the_judged_part_are_the_whole_stack_sliced(seed, rows, clusters):
    joint = _joint(seed, rows, clusters)
    rng = np.random.default_rng(seed)
    res = resample_joint(joint, 5, rng)
    for name in joint.attribute_names:
        whole = joint.bootstrap_counts(name, res)
        G, K = whole.shape[1:]
        groups = sorted(rng.choice(G, int(rng.integers(1, G + 1)), replace=False).tolist())
        cols = sorted(rng.choice(K, int(rng.integers(1, K + 1)), replace=False).tolist())
        part = joint.bootstrap_counts(name, res, groups, cols)
        assert part.dtype == np.int64
        sliced = np.ascontiguousarray(whole)[:, groups][:, :, cols]  # what the host did
        assert np.array_equal(part, sliced)
        # ... in the same memory layout (replicate index fastest), which numpy's sums follow
        assert [s for s, n in zip(part.strides, part.shape, strict=True) if n > 1] == [
            s for s, n in zip(sliced.strides, sliced.shape, strict=True) if n > 1]


def test_shared_replicate_tables_are_built_once_and_read_only():
    joint = _joint(1)
    res = resample_joint(joint, 4, np.random.default_rng(1))
    shared = BootstrapReplicates(joint, res)
    assert shared.n_boot == 4
    a = shared.tables("race", (0, 1, 2), None)
    assert shared.tables("race", [0, 1, 2]) is a
    assert np.array_equal(a, joint.bootstrap_counts("race", res, [0, 1, 2]))
    with pytest.raises(ValueError):
        a[0, 0, 0] = 99


# ------------------------------------------------------------------------------ compute_batch
def _reference_batch(auditor, table, counts):
    """The built-ins' compute_batch before blocks and ``metrics=``: the whole stack at once."""
    if isinstance(auditor, BalanceAuditor):
        out = {"balance": counting.balance_min(counts),
               "balance_mean": counting.balance_mean(counts)}
        if table.n_noise:
            out["balance_noise_adjusted"] = counting.noise_adjusted_balance(counts,
                                                                            table.n_noise)
        return {k: np.asarray(v, dtype=float) for k, v in out.items()}
    if isinstance(auditor, DistributionAuditor):
        ground = auditor._ground(table)
        sizes = counts.sum(axis=1)
        out = {}
        for key, pc in (("ed", counting.ed_per_cluster(counts)),
                        ("wd", counting.wd_per_cluster(counts, ground=ground))):
            out[key] = np.asarray(counting.aggregate(pc, sizes, "weighted-mean"), dtype=float)
            out[f"{key}_max"] = np.asarray(counting.aggregate(pc, sizes, "max"), dtype=float)
            out[f"{key}_sum"] = np.asarray(counting.aggregate(pc, sizes, "sum"), dtype=float)
        return out
    fns = {"fairness_cce": counting.fairness_cce, "cce": counting.cce, "mnce": counting.mnce,
           "ne": counting.ne, "fce_fair": counting.fce_fair,
           "balance_prime": counting.balance_prime, "proportion": counting.proportion}
    return {k: np.asarray(f(counts), dtype=float) for k, f in fns.items()}


AUDITORS = [BalanceAuditor(), DistributionAuditor(), DistributionAuditor("ordinal"),
            DistributionAuditor("fairkm-compat"), CapacityAuditor()]


@pytest.mark.parametrize("auditor", AUDITORS, ids=lambda a: f"{a.name}-{vars(a)}")
@pytest.mark.parametrize("seed,rows,clusters", [(0, 600, 200), (1, 3000, 40), (2, 300, 3)])
def test_builtin_compute_batch_in_blocks_is_bit_identical(auditor, seed, rows, clusters):
    import fairaudit.metrics.bootstrap as bs

    joint = _joint(seed, rows, clusters)
    res = resample_joint(joint, 37, np.random.default_rng(seed))
    for name, table in joint.tables().items():
        counts = joint.bootstrap_counts(name, res)
        G, K = counts.shape[1:]
        # the stack as the host used to pass it: the whole C-ordered stack, fancy-sliced
        before = np.ascontiguousarray(counts)[:, list(range(G))][:, :, list(range(K))]
        ref = _reference_batch(auditor, table, before)
        old = bs.in_blocks.__kwdefaults__["max_elements"]
        try:
            for block in (1, 7 * table.counts.size, old):  # two replicates, 7, the default
                bs.in_blocks.__kwdefaults__["max_elements"] = block
                got = auditor.compute_batch(table, counts)
                assert list(got) == list(ref)
                for k in ref:
                    assert got[k].tobytes() == ref[k].tobytes(), (name, k, block)
        finally:
            bs.in_blocks.__kwdefaults__["max_elements"] = old
        some = list(ref)[1::2]
        got = auditor.compute_batch(table, counts, metrics=some)
        assert list(got) == some
        assert all(got[k].tobytes() == ref[k].tobytes() for k in some)


# ------------------------------------------------------------------------------ breakdown
class _Rows(CountingAuditor):
    """Rows without a "metric" key (the headline's), rows of another metric, unknown rows."""

    name = "rows"
    metrics = (MetricSpec("a", Direction.HIGHER_IS_BETTER, "a", headline=True),
               MetricSpec("b", Direction.HIGHER_IS_BETTER, "b"))

    def compute(self, table):
        return {"a": 1.0, "b": 2.0}

    def breakdown(self, table):
        return [{"cluster": 0, "value": 1.0, "n": 3},
                {"metric": "b", "cluster": 0, "value": 2.0, "n": 3},
                {"metric": "zzz", "cluster": 1, "value": 0.0, "n": 3},
                {"cluster": 1, "value": 0.5, "n": 4, "metric": "a"}]


class _Mapping(_Rows):
    name = "mapping"

    def breakdown(self, table):
        return {"b": [{"cluster": 2, "value": 0.1, "n": 5}]}


@pytest.mark.parametrize("auditor", [*AUDITORS, _Rows(), _Mapping()], ids=lambda a: a.name)
def test_one_breakdown_filed_by_metric_equals_breakdown_for(auditor):
    joint = _joint(3)
    for table in joint.tables().values():
        metrics = list(auditor.compute(table))
        got = _breakdown_by_metric(auditor, table, metrics)
        want = {m: tuple({k: v for k, v in r.items() if k != "metric"}
                         for r in auditor.breakdown_for(table, m)) for m in metrics}
        assert repr(got) == repr(want)  # key order included


# ------------------------------------------------------------------------------ whole step
class _Slow(CapacityAuditor):
    """The same auditor without the fast paths: per-metric breakdown_for, no ``metrics=``."""

    def breakdown_for(self, table, metric):
        return CountingAuditor.breakdown_for(self, table, metric)

    def compute_batch(self, table, counts):
        return _reference_batch(CapacityAuditor(), table, counts)


def test_counting_step_gives_the_same_results_on_every_path():
    joint = _joint(4, rows=2000, clusters=900)  # mostly clusters of one to four rows
    tables = joint.tables()
    res = resample_joint(joint, 50, np.random.default_rng(4))
    kw = {"min_cell": 10, "level": 0.95}
    fast = run_counting_auditor(CapacityAuditor(), "seg", joint, tables,
                                BootstrapReplicates(joint, res), **kw)
    plain = run_counting_auditor(CapacityAuditor(), "seg", joint, tables, res, **kw)
    slow = run_counting_auditor(_Slow(), "seg", joint, tables, res, **kw)
    assert [r.to_json() for r in fast] == [r.to_json() for r in plain]
    assert [repr(r.to_json()) for r in fast] == [repr(r.to_json()) for r in slow]
    assert any(r.ci is not None for r in fast)
    j = judgeable(tables["sex|race"], 10)
    assert j.table is not None and len(j.table.clusters) > 500
