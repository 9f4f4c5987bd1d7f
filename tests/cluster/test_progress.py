"""Progress records of the clusterers' long loops (``fairaudit.progress``, issue 25)."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from fairaudit.cluster import FairFuzzyCMeans, _progress
from fairaudit.cluster._mr_assign import mutual_reachability_assign
from fairaudit.cluster._progress import Progress


def _table(n=300, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    s = (rng.random(n) < 0.2 + 0.6 * (X[:, 0] > 0)).astype(int)
    return X, s


def _records(caplog):
    return [r for r in caplog.records if r.name == "fairaudit.progress"]


def test_ffcm_fit_reports_sweeps_and_candidates(caplog):
    X, s = _table()
    with caplog.at_level(logging.INFO, logger="fairaudit.progress"):
        est = FairFuzzyCMeans(3, random_state=0).fit(X, sensitive=s)
    recs = _records(caplog)
    tasks = {r.progress["task"] for r in recs}
    assert {"FCM sweeps", "FFCM sweeps", "FFCM eta candidates"} <= tasks
    for r in recs:
        p = r.progress
        assert set(p) == {"task", "done", "total", "unit"}
        assert 0 <= p["done"] <= p["total"]
        assert r.getMessage() == f"{p['task']} {p['done']}/{p['total']}"
    # each loop ends with a closing record (done == total): a display can close its bar
    last = {}
    for r in recs:
        last[r.progress["task"]] = r.progress
    assert all(p["done"] == p["total"] for p in last.values())
    assert last["FFCM eta candidates"]["unit"] == "candidates"
    assert last["FFCM eta candidates"]["done"] == len(est.eta_reductions_)
    assert last["FFCM sweeps"]["unit"] == "sweeps"


def test_silent_without_a_handler_at_info(caplog):
    X, s = _table()
    with caplog.at_level(logging.WARNING, logger="fairaudit.progress"):
        FairFuzzyCMeans(3, random_state=0).fit(X, sensitive=s)
        assert not Progress("x", 10, "rows").enabled
    assert _records(caplog) == []


def test_throttled_to_one_record_per_interval(caplog, monkeypatch):
    times = iter([0.0, 0.2, 0.5, 1.1, 1.3, 2.4, 2.5])
    monkeypatch.setattr(_progress.time, "monotonic", lambda: next(times))
    with caplog.at_level(logging.INFO, logger="fairaudit.progress"):
        p = Progress("job", 6, "rows")  # t = 0
        for done in range(1, 7):  # t = 0.2, 0.5, 1.1, 1.3, 2.4, 2.5
            p.update(done)
        p.close()
    done = [r.progress["done"] for r in _records(caplog)]
    assert done == [3, 5, 6]  # after 1 s, after 2 s, and the end


def test_assignment_reports_rows(caplog):
    rng = np.random.default_rng(1)
    fit_X = rng.normal(size=(200, 2))
    core = np.full(200, 0.1)
    labels = (fit_X[:, 0] > 0).astype(np.int64)
    with caplog.at_level(logging.INFO, logger="fairaudit.progress"):
        mutual_reachability_assign(fit_X, core, labels, rng.normal(size=(50, 2)), 5)
    (rec,) = _records(caplog)
    assert rec.progress == {"task": "FairDen assignment", "done": 50, "total": 50, "unit": "rows"}


@pytest.mark.parametrize("done", [0, 3])
def test_close_early_reports_the_steps_taken(caplog, done):
    with caplog.at_level(logging.INFO, logger="fairaudit.progress"):
        Progress("sweeps", 300, "sweeps").close(done)
    (rec,) = _records(caplog)
    assert rec.progress["done"] == rec.progress["total"] == done
