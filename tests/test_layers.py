"""Layering rules, checked on the source (AST), not by importing.

- adapters under ``plugins/`` import only public fairaudit API (no ``fairaudit._*``);
- layer 1 (``fairaudit/cluster``, ``metrics``, ``preprocess``) imports no pluggy / click / jinja2
  and nothing of the host (``fairaudit.core.plugins|runner|cli``); polars only in
  ``fairaudit/preprocess/encoding.py``;
- library code never calls ``print()``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LAYER1 = ("cluster", "metrics", "preprocess")
HOST_MODULES = ("fairaudit.core.plugins", "fairaudit.core.runner", "fairaudit.cli")
FORBIDDEN_IN_LAYER1 = ("pluggy", "click", "jinja2", *HOST_MODULES)
POLARS_ALLOWED = {"fairaudit/preprocess/encoding.py"}


def _py_files(*parts: str) -> list[Path]:
    return sorted((ROOT.joinpath(*parts)).rglob("*.py"))


def _rel(p: Path) -> str:
    return p.relative_to(ROOT).as_posix()


def _imports(path: Path) -> list[tuple[int, str]]:
    rel = path.relative_to(ROOT).with_suffix("")
    return _imports_src(path.read_text(encoding="utf-8"), list(rel.parts[:-1]))


def _imports_src(source: str, package: list[str]) -> list[tuple[int, str]]:
    """Every imported module name (absolute), with its line; relative imports resolved."""
    tree = ast.parse(source)
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            out.append((node.lineno, mod))
            out += [(node.lineno, f"{mod}.{a.name}") for a in node.names]
    return out


def _matches(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def test_the_files_exist():
    assert _py_files("plugins"), "no adapter modules found under plugins/"
    for sub in LAYER1:
        assert (ROOT / "fairaudit" / sub / "__init__.py").exists()


@pytest.mark.parametrize("path", _py_files("plugins"), ids=_rel)
def test_adapters_use_only_public_fairaudit_api(path):
    bad = [
        f"line {line}: {mod}"
        for line, mod in _imports(path)
        if mod.startswith("fairaudit.") and any(p.startswith("_") for p in mod.split(".")[1:])
    ]
    assert not bad, f"{_rel(path)} imports private fairaudit API: {bad}"


@pytest.mark.parametrize(
    "path", [p for sub in LAYER1 for p in _py_files("fairaudit", sub)], ids=_rel
)
def test_layer1_imports_nothing_from_the_host(path):
    imports = _imports(path)
    bad = [
        f"line {line}: {mod}"
        for line, mod in imports
        for prefix in FORBIDDEN_IN_LAYER1
        if _matches(mod, prefix)
    ]
    assert not bad, f"{_rel(path)} (layer 1) imports host/plugin machinery: {sorted(set(bad))}"
    if _rel(path) not in POLARS_ALLOWED:
        polars = [f"line {line}" for line, mod in imports if _matches(mod, "polars")]
        assert not polars, f"{_rel(path)} (layer 1) imports polars at {polars}"


def _prints(path: Path) -> list[int]:
    return _prints_src(path.read_text(encoding="utf-8"))


def _prints_src(source: str) -> list[int]:
    tree = ast.parse(source)
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "print"
    ]


@pytest.mark.parametrize("path", _py_files("fairaudit") + _py_files("plugins"), ids=_rel)
def test_no_print_in_library_code(path):
    lines = _prints(path)
    assert not lines, (
        f"{_rel(path)} calls print() at lines {lines}; use logging (or click.echo in cli.py)"
    )


def test_the_checker_sees_what_it_should():
    """The AST helpers themselves find private imports (also relative ones) and prints."""
    src = "import os\nfrom fairaudit._internal import x\nfrom .._secret import y\nprint(1)\n"
    mods = [m for _, m in _imports_src(src, ["fairaudit", "cluster"])]
    assert "fairaudit._internal" in mods
    assert "fairaudit._secret" in mods
    assert _prints_src(src) == [4]
    assert not _prints_src("log.info('print(x)')\n")
    assert _matches("fairaudit.core.plugins.x", "fairaudit.core.plugins")
    assert not _matches("fairaudit.pluginsx", "fairaudit.core.plugins")
