"""The command line lets OpenMP threads sleep while they wait (OMP_WAIT_POLICY=PASSIVE) unless
the user set the variable; the Python API leaves the environment alone."""

from __future__ import annotations

import os

from click.testing import CliRunner

from fairaudit.cli import main


def test_cli_sets_passive_wait_policy(monkeypatch):
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    result = CliRunner().invoke(main, ["plugins"])
    assert result.exit_code == 0, result.output
    assert os.environ["OMP_WAIT_POLICY"] == "PASSIVE"


def test_cli_keeps_users_wait_policy(monkeypatch):
    monkeypatch.setenv("OMP_WAIT_POLICY", "ACTIVE")
    result = CliRunner().invoke(main, ["plugins"])
    assert result.exit_code == 0, result.output
    assert os.environ["OMP_WAIT_POLICY"] == "ACTIVE"
