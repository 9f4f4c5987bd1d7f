"""Exceptions. Library code raises these; only the CLI turns them into exit codes.

Every message names the file, column, key or parameter at fault and says what was expected.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


class FairauditError(Exception):
    """Base class. ``exit_code`` is what the CLI exits with (2 = usage, config or input error)."""

    exit_code = 2


class InputError(FairauditError, ValueError):
    """The data cannot be audited as asked (missing file, column, bad values...)."""


class ConfigError(FairauditError, ValueError):
    """A chain, option or parameter is invalid."""


class OutputError(ConfigError):
    """An output cannot be written where asked: the path is an input, a folder, a device or a
    FIFO, the folder is missing or read-only, or the disk is full. Nothing was written."""


class ResourceError(FairauditError):
    """A run would need more memory (or time) than it may take: found before the work starts,
    with the option that lowers the need and the one that raises the bound."""


class ChainValidationError(ConfigError):
    """Several problems found in a chain at once; ``problems`` holds ``(toml_path, message)``."""

    def __init__(self, problems: Sequence[tuple[str, str]], source: str | None = None):
        self.problems = tuple(problems)
        self.source = source
        where = f"{source}: " if source else ""
        what = "in the options" if source == "command line" else "in the chain"
        if source == "python":  # a ChainSpec built in Python, given as fairaudit.audit(chain=...)
            what = "in the ChainSpec given as chain="
        if source == "api":  # the keywords of fairaudit.audit(...)
            what = "in the arguments of fairaudit.audit"
        where = "" if source in ("command line", "python", "api") else where
        lines = [f"{where}{len(self.problems)} problem(s) {what}:"]
        lines += [f"  {path}: {msg}" if path else f"  {msg}" for path, msg in self.problems]
        super().__init__("\n".join(lines))


class MissingArtifactError(FairauditError, LookupError):
    """A step needs an artifact (labels, features, ...) that nothing provided."""


class PluginError(FairauditError):
    """A plugin failed to load or registered something invalid."""


class DuplicateComponentError(PluginError):
    """Two plugins registered components with the same kind and name."""


class MissingExtraError(ConfigError, ImportError):
    """A feature needs an optional dependency that is not installed. The message names the
    feature, the package and the line that installs it (``pip install
    'fairaudit-clusters[publish]'``); the CLI exits 2. It is an :class:`ImportError` too, so
    code that guards an optional import keeps working."""

    def __init__(self, feature: str, extra: str, module: str, reason: str = ""):
        self.feature, self.extra, self.module = feature, extra, module
        self.install = f"pip install 'fairaudit-clusters[{extra}]'"
        state = f"which does not import ({reason})" if reason else "which is not installed"
        super().__init__(f"{feature} needs {module}, {state}: {self.install}")


def require_extra(module: str, extra: str, feature: str) -> Any:
    """Import ``module`` (an optional dependency) or raise :class:`MissingExtraError` naming
    ``feature`` and the extra ``[extra]`` that installs it. Returns the module."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        missing = getattr(exc, "name", None)
        broken = missing not in (None, module) and not module.startswith(f"{missing}.")
        # installed, but one of its own imports fails: say so (reinstalling the extra mends it)
        reason = str(exc) if broken else ""
        raise MissingExtraError(feature, extra, module, reason) from exc


class InfeasibleTargetError(InputError):
    """``fairaudit repair``: no relabelling of these rows meets the targets (exit 2); the
    message names the group that makes it so when one does."""
