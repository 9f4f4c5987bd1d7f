"""The privacy ledger (fairaudit.privacy.ledger) and `fairaudit ledger`: the file, its lock, the
version-1 upgrade, the budget commands. The attacks on it are in test_privacy_attacks.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import polars as pl
import pytest

import fairaudit
from fairaudit.errors import ConfigError
from fairaudit.privacy.ledger import FORMAT, VERSION, change_budget, open_ledger


@pytest.fixture(autouse=True)
def _state_home(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))


def table(seed: int = 0, n: int = 800) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    return pl.DataFrame({"sex": rng.choice(["F", "M"], n), "seg": rng.integers(0, 3, n)})


def publish(data, ledger, **kw):
    kw = {"privacy_budget": 4.0, "new_ledger": True, "privacy_source": "people",
          "bootstrap": 20, **kw}
    return fairaudit.audit(str(data), sensitive=["sex"], labels="seg", publish=True,
                           ledger=str(ledger), **kw)


def test_the_lock_is_one_for_a_link_and_its_target(tmp_path):
    """A run holding the ledger through a link keeps out a run through the real path (and the
    reverse); no sleeps: the second asks not to wait."""
    real = tmp_path / "real.json"
    alias = tmp_path / "alias.json"
    with open_ledger(real, create=True) as book:
        book.write()
    alias.symlink_to(real)
    inside, done = threading.Event(), threading.Event()

    def hold():
        with open_ledger(alias):
            inside.set()
            done.wait(30)

    t = threading.Thread(target=hold)
    t.start()
    try:
        assert inside.wait(30)
        with pytest.raises(ConfigError, match="locked by another release"):
            with open_ledger(real, wait=False):
                pass
    finally:
        done.set()
        t.join()
    with open_ledger(real, wait=False) as book:  # free again
        assert book.keys() == []


def test_a_new_ledger_is_written_whole_readable_by_its_owner_only(tmp_path, caplog):
    """... and its start is a warning (a job whose home is new on every run would otherwise
    start fresh budgets silently); the next release into it is not."""
    data = tmp_path / "d" / "t.parquet"
    data.parent.mkdir()
    table().write_parquet(data)
    ledger = tmp_path / "l.json"
    caplog.set_level("WARNING", logger="fairaudit.privacy.ledger")
    publish(data, ledger)
    started = [r for r in caplog.records if "a new ledger was started" in r.getMessage()]
    assert len(started) == 1 and str(ledger) in started[0].getMessage()
    publish(data, ledger, dp_categories={"sex": ["F", "M"]})
    assert len([r for r in caplog.records if "a new ledger" in r.getMessage()]) == 1
    assert (os.stat(ledger).st_mode & 0o777) == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d", "l.json", "l.json.lock"]
    book = json.loads(ledger.read_text())
    assert book["format"] == FORMAT and book["version"] == VERSION
    src = book["sources"]["people"]
    assert src["budget"] == 4.0
    assert [h["how"] for h in src["budget_history"]] == ["set by the source's first release"]
    r = src["releases"][0]
    assert r["input"] == str(data.resolve()) and r["fingerprint"].startswith("audited-v1:")
    assert r["epsilon"] == pytest.approx(1.0) and r["delta"] == 0.0


def test_a_version_1_ledger_is_upgraded_keeping_what_was_spent(tmp_path):
    data = tmp_path / "t.parquet"
    table().write_parquet(data)
    ledger = tmp_path / "l.json"
    ledger.write_text(json.dumps({"version": 1, "sources": {"people": {
        "budget": 2.0, "releases": [{"created": "2026-01-01T00:00:00Z",
                                     "fingerprint": "sha256:abc", "options": "sha256:def",
                                     "epsilon": 1.0, "delta": 0.0, "document": {}}]}}}))
    run = publish(data, ledger, privacy_budget=None)
    assert run.doc["privacy"]["spent"] == pytest.approx(2.0)  # charged again: another fp
    book = json.loads(ledger.read_text())
    assert book["version"] == VERSION
    src = book["sources"]["people"]
    assert src["budget"] == 2.0 and len(src["releases"]) == 2
    assert src["budget_history"][0]["how"] == "recorded by a version-1 ledger"
    with pytest.raises(ConfigError, match="has spent epsilon 2 of its budget 2"):
        publish(data, ledger, privacy_budget=None, epsilon=0.5)


def test_a_bad_version_1_ledger_is_refused_naming_the_field(tmp_path):
    ledger = tmp_path / "l.json"
    ledger.write_text(json.dumps({"version": 1, "sources": {"p": {
        "releases": [{"created": "x", "fingerprint": "f", "options": "o",
                      "epsilon": float("inf"), "document": {}}]}}}).replace("Infinity", "1e999"))
    with pytest.raises(ConfigError, match=r"sources\['p'\]"):
        with open_ledger(ledger):
            pass


def test_ledger_commands_show_raise_and_lower(tmp_path, run_cli):
    data = tmp_path / "t.parquet"
    table().write_parquet(data)
    ledger = tmp_path / "l.json"
    publish(data, ledger, privacy_budget=1.0)
    res = run_cli("ledger", "raise", "peple", "--to", "3", "--reason", "x", "--ledger", ledger)
    assert res.exit_code == 2 and "did you mean 'people'" in res.output
    res = run_cli("ledger", "raise", "people", "--to", "0.5", "--reason", "x", "--ledger",
                  ledger)
    assert res.exit_code == 2 and "ledger lower" in res.output
    res = run_cli("ledger", "lower", "people", "--to", "nan", "--ledger", ledger)
    assert res.exit_code == 2 and "--to" in res.output
    res = run_cli("ledger", "lower", "people", "--to", "2", "--ledger", ledger)
    assert res.exit_code == 2 and "not below" in res.output
    assert run_cli("ledger", "raise", "people", "--to", "3", "--reason", "board, 2026-12",
                   "--ledger", ledger).exit_code == 0
    res = run_cli("ledger", "lower", "people", "--to", "0.5", "--ledger", ledger)
    assert res.exit_code == 0 and "no further release" in res.output
    shown = json.loads(run_cli("ledger", "show", "--json", "--ledger", ledger).output)
    (src,) = shown["sources"]
    assert src["source"] == "people" and src["budget"] == 0.5 and src["left"] == 0.0
    assert [(h["from"], h["to"], h["reason"]) for h in src["budget_history"]] == [
        (None, 1.0, None), (1.0, 3.0, "board, 2026-12"), (3.0, 0.5, None)]
    assert src["spent"] == pytest.approx(1.0) and len(src["releases"]) == 1
    res = run_cli("ledger", "show", "--ledger", tmp_path / "nope.json")
    assert res.exit_code == 2 and "does not exist" in res.output
    res = run_cli("ledger", "show")  # the default ledger, never used
    assert res.exit_code == 0 and "none yet" in res.output
    assert not (tmp_path / "state").exists()


def test_two_concurrent_releases_through_a_link_and_its_target_spend_one_budget(tmp_path):
    """The lock follows the real file: two processes started together against a budget of 1,
    one through the link, one through the target: exactly one release."""
    for i in (1, 2):
        table(seed=i).write_parquet(tmp_path / f"t{i}.parquet")
    real = tmp_path / "real.json"
    with open_ledger(real, create=True) as book:
        book.set_budget("people", 1.0, how="test")
        book.write()
    (tmp_path / "alias.json").symlink_to(real)
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path / "state")}
    procs = [subprocess.Popen(
        [sys.executable, "-m", "fairaudit", "audit", str(tmp_path / f"t{i}.parquet"), "-s",
         "sex", "--labels", "seg", "--publish", "--epsilon", "0.7", "--bootstrap", "20",
         "--privacy-source", "people", "--ledger", str(tmp_path / name), "-q", "-o",
         str(tmp_path / f"r{i}.html")], env=env, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True)
        for i, name in ((1, "alias.json"), (2, "real.json"))]
    codes = sorted(p.wait(timeout=600) for p in procs)
    outputs = [p.stdout.read() for p in procs]
    assert codes == [0, 2], outputs
    assert any("budget" in o for o in outputs)
    assert (tmp_path / "alias.json").is_symlink()
    assert len(json.loads(real.read_text())["sources"]["people"]["releases"]) == 1


def test_change_budget_refuses_a_raise_without_a_reason(tmp_path):
    ledger = tmp_path / "l.json"
    with open_ledger(ledger, create=True) as book:
        book.set_budget("people", 1.0, how="test")
        book.write()
    with pytest.raises(ConfigError, match="--reason"):
        change_budget(ledger, "people", 2.0, raising=True, reason="  ")
    assert json.loads(Path(ledger).read_text())["sources"]["people"]["budget"] == 1.0
