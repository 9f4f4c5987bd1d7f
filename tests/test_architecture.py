"""The shape of the package, checked on the source (AST), not by importing (issue 24).

- no import circle among ``fairaudit`` modules, counting every import: module level, inside
  functions, and under ``if TYPE_CHECKING:`` (a type-only import still ties two modules
  together). A package ``__init__`` that exports names lazily (``fairaudit._lazy``) is resolved
  through its map: ``from fairaudit.cluster import nearest_centre`` depends on the module that
  defines it, and the ``TYPE_CHECKING`` mirror of that map in the ``__init__`` is not an import;
- at most 12 modules directly under ``fairaudit/``;
- no module over 600 lines (in ``fairaudit/`` and ``plugins/``) unless its first lines say why
  it is one unit ("One unit:").
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PKG = ROOT / "fairaudit"
MAX_TOP_LEVEL = 12
MAX_LINES = 600
ONE_UNIT = "One unit:"


def _modules() -> dict[str, Path]:
    out = {}
    for p in sorted(PKG.rglob("*.py")):
        rel = p.relative_to(ROOT).with_suffix("")
        parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
        out[".".join(parts)] = p
    return out


def _is_type_checking(node: ast.If) -> bool:
    t = node.test
    return (isinstance(t, ast.Name) and t.id == "TYPE_CHECKING") or (
        isinstance(t, ast.Attribute) and t.attr == "TYPE_CHECKING")


def _imports(tree: ast.AST, *, skip_type_checking: bool) -> Iterator[ast.Import | ast.ImportFrom]:
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and skip_type_checking and _is_type_checking(node):
            continue
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        else:
            yield from _imports(node, skip_type_checking=skip_type_checking)


def _lazy_map(tree: ast.AST) -> dict[str, str]:
    """``{"name": "fairaudit.module"}`` dict literals of a package ``__init__`` (its lazy map)."""
    out = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            for k, v in zip(node.keys, node.values, strict=True):
                if (isinstance(k, ast.Constant) and isinstance(k.value, str)
                        and isinstance(v, ast.Constant) and isinstance(v.value, str)
                        and v.value.startswith("fairaudit")):
                    out[k.value] = v.value
    return out


def import_graph() -> dict[str, set[str]]:
    mods = _modules()
    trees = {m: ast.parse(p.read_text(encoding="utf-8")) for m, p in mods.items()}
    lazy = {m: _lazy_map(t) for m, t in trees.items() if mods[m].name == "__init__.py"}

    def resolve(name: str) -> str | None:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for m, tree in trees.items():
        is_init = mods[m].name == "__init__.py"
        package = m.split(".") if is_init else m.split(".")[:-1]
        deps: set[str] = set()
        for node in _imports(tree, skip_type_checking=is_init):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                base = node.module or ""
                if node.level:
                    base = ".".join(package[: len(package) - node.level + 1] + [base] * bool(base))
                targets = []
                for a in node.names:
                    if f"{base}.{a.name}" in mods:
                        targets.append(f"{base}.{a.name}")
                    elif a.name in lazy.get(base, {}):
                        targets.append(lazy[base][a.name])
                    else:
                        targets.append(base)
            for t in targets:
                r = resolve(t) if t.startswith("fairaudit") else None
                if r and r != m:
                    deps.add(r)
        graph[m] = deps
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in graph:
                    continue
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    x = stack.pop()
                    on.discard(x)
                    comp.append(x)
                    if x == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def test_no_import_circles():
    found = circles(import_graph())
    assert not found, "import circles among fairaudit modules: " + "; ".join(
        " <-> ".join(c) for c in found)


def test_the_circle_check_finds_circles():
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": set()}) == []
    graph = import_graph()
    assert "fairaudit.report.results" in graph["fairaudit.core.components"]
    # lazy exports resolve to the defining module; function-level imports count
    assert "fairaudit.cluster._ffcm_ops" in graph["fairaudit.cluster.lcd_refine"]
    assert "fairaudit.core.checks" in graph["fairaudit.core.steps"]


def test_at_most_12_top_level_modules():
    top = sorted(p.name for p in PKG.glob("*.py"))
    assert len(top) <= MAX_TOP_LEVEL, f"{len(top)} modules directly under fairaudit/: {top}"


def test_large_modules_say_why_they_are_one_unit():
    big = []
    for p in sorted([*PKG.rglob("*.py"), *(ROOT / "plugins").rglob("*.py")]):
        rel = p.relative_to(ROOT).as_posix()
        lines = p.read_text(encoding="utf-8").splitlines()
        if len(lines) > MAX_LINES and not any(
                ONE_UNIT in line for line in lines[:15]):
            big.append(f"{rel} ({len(lines)} lines)")
    assert not big, (f"modules over {MAX_LINES} lines without '{ONE_UNIT} <why>' in their first "
                     f"lines: {big}")


def test_one_conftest_module():
    """Test modules import helpers with ``from conftest import ...``; a second conftest.py in a
    sub-folder shadows the root one for some of them, depending on collection order (a full run
    failed to collect six modules that way while each file alone passed)."""
    tests = Path(__file__).resolve().parent
    extra = sorted(str(p.relative_to(tests)) for p in tests.rglob("conftest.py")
                   if p.parent != tests)
    assert not extra, f"put fixtures in tests/conftest.py, not in {extra}"
