"""Helpers for tests that install the small fixture plugins of ``tests/plugins/`` as if they
were third-party packages (fake entry points)."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import sys
from pathlib import Path

FIXTURE_PLUGINS = Path(__file__).resolve().parent / "plugins"


def load_fixture_plugin(name: str):
    """Import ``tests/plugins/<name>.py`` under a private module name (no clash with the
    top-level ``plugins/`` folder)."""
    mod_name = f"fairaudit_fixture_{name}"
    if mod_name in sys.modules:
        return sys.modules[mod_name]
    spec = importlib.util.spec_from_file_location(mod_name, FIXTURE_PLUGINS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[mod_name] = module
    spec.loader.exec_module(module)
    return module


class _Dist:
    def __init__(self, name: str, version: str = "9.9"):
        self.name = name
        self.version = version


class FakeEntryPoint:
    """Stands in for an installed third-party plugin's entry point; ``exc`` makes ``load`` fail."""

    group = "fairaudit"

    def __init__(self, name: str, module: str | None, package: str = "fixture-plugin", exc=None):
        self.name = name
        self.module = module
        self.value = f"fairaudit_fixture_{module}"
        self.dist = _Dist(package)
        self.exc = exc

    def load(self):
        if self.exc is not None:
            raise self.exc
        return load_fixture_plugin(self.module)


def install_fake_entry_points(monkeypatch, *eps) -> None:
    """Make ``importlib.metadata.entry_points(group="fairaudit")`` also return ``eps``."""
    real = importlib.metadata.entry_points

    def entry_points(**kwargs):
        found = list(real(**kwargs))
        if kwargs.get("group") == "fairaudit":
            found += list(eps)
        return found

    monkeypatch.setattr(importlib.metadata, "entry_points", entry_points)
