"""Docs stay in step with the code: hooks, CLI commands, example chains."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import fairaudit.hookspecs as hookspecs

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"


def _hook_signatures() -> dict[str, str]:
    out = {}
    for name, fn in vars(hookspecs).items():
        if name.startswith("fairaudit_") and callable(fn):
            sig = inspect.signature(fn)
            params = ", ".join(
                f"{p.name}: {p.annotation}" if p.annotation is not p.empty else p.name
                for p in sig.parameters.values()
            )
            out[name] = f"{name}({params}) -> {sig.return_annotation}"
    return out


def test_every_hook_documented_with_exact_signature():
    text = (DOCS / "plugin_hooks.md").read_text()
    headings = set(re.findall(r"^### `(.+)`$", text, flags=re.M))
    for sig in _hook_signatures().values():
        assert sig in headings, f"docs/plugin_hooks.md lacks the heading `{sig}`"


def test_no_documented_hook_is_missing_from_specs():
    text = (DOCS / "plugin_hooks.md").read_text()
    documented = set(re.findall(r"^### `(fairaudit_\w+)\(", text, flags=re.M))
    assert documented == set(_hook_signatures())


def test_cli_doc_covers_every_command():
    from fairaudit.cli import main

    text = (DOCS / "cli.md").read_text()
    for name in main.commands:
        assert f"fairaudit {name}" in text, f"docs/cli.md does not document `fairaudit {name}`"


def test_readme_starts_with_the_two_commands():
    text = (ROOT / "README.md").read_text()
    head = text[: text.find("##", 10)]
    assert "make demo" in head and "make test" in head


def test_the_reference_chain_in_docs_validates(tmp_path, run_cli):
    """docs/chain.md's first TOML block lists every key; a user copies it whole (a new user's
    trial found its [[threshold]] on wd without the auditor that gives wd)."""
    block = re.search(r"```toml\n(.*?)```", (DOCS / "chain.md").read_text(), re.S).group(1)
    (tmp_path / "chain.toml").write_text(block)
    res = run_cli("validate", "chain.toml")
    assert res.exit_code == 0, res.output
