"""The input's content hash in the document: computed on a thread that the runner starts after
the passes over the data (``hash`` stage), equal to :func:`fairaudit.core.io.fingerprint`."""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest

from fairaudit.core import io
from fairaudit.core.io import BackgroundFingerprint, fingerprint


def _table(path, n=300, seed=0):
    rng = np.random.default_rng(seed)
    pl.DataFrame({"sex": rng.choice(["F", "M"], n), "segment": rng.integers(0, 3, n),
                  "x": rng.normal(size=n)}).write_parquet(path)


def test_background_hash_equals_the_hash_and_starts_once(tmp_path):
    f = tmp_path / "t.parquet"
    _table(f)
    h = BackgroundFingerprint(str(f))
    assert h._thread is None  # nothing hashed before start
    h.start()
    first = h._thread
    h.start()
    assert h._thread is first
    assert h.result() == fingerprint(str(f))
    lazy = BackgroundFingerprint(str(f))  # result() starts it when no stage did
    assert lazy.result() == fingerprint(str(f))


def test_background_hash_hands_its_error_to_the_caller(monkeypatch, tmp_path):
    def boom(spec, fmt=None):
        raise OSError("disk gone")

    monkeypatch.setattr(io, "fingerprint", boom)
    h = BackgroundFingerprint(str(tmp_path / "x.parquet"))
    with pytest.raises(OSError, match="disk gone"):
        h.result()


def test_the_hash_starts_after_the_passes_over_the_data(monkeypatch, run_cli, tmp_path):
    from fairaudit.core import stages

    f = tmp_path / "t.parquet"
    _table(f)
    seen: dict[str, bool] = {}

    def spy(name, fn):
        def wrapped(s):
            # this run's own hash (a thread of another test in the process does not count)
            seen[name] = s.fingerprint is not None and s.fingerprint._thread is not None
            return fn(s)
        return wrapped

    monkeypatch.setattr(stages, "STAGES", tuple((n, spy(n, fn)) for n, fn in stages.STAGES))
    res = run_cli("audit", str(f), "--sensitive", "sex", "--labels", "segment", "--json",
                  "o.json", "--out", "o.html", "--quiet")
    assert res.exit_code == 0, res.output
    assert not seen["count"] and not seen["materialise"] and not seen["hash"]
    assert seen["check"] and seen["audit"]
    doc = json.loads((tmp_path / "o.json").read_text())
    assert doc["input"]["fingerprint"] == fingerprint(str(f))


def test_a_run_that_fails_in_the_count_never_hashes(monkeypatch, run_cli, tmp_path):
    f = tmp_path / "t.parquet"
    pl.DataFrame({"sex": ["F", None, "M"], "segment": [0, 1, 1]}).write_parquet(f)
    calls = []
    monkeypatch.setattr(io, "fingerprint", lambda *a, **k: calls.append(a) or "sha256:x")
    res = run_cli("audit", str(f), "--sensitive", "sex", "--labels", "segment",
                  "--on-null", "error", "--json", "o.json", "--out", "o.html", "--quiet")
    assert res.exit_code == 2 and "null" in res.output, res.output
    assert calls == []
