"""Plugin manager, component registry and the typed :class:`Host` facade.

A fresh plugin manager is built for every run (no module-global state). Built-in components are
ordinary plugin modules registered through the ``fairaudit`` entry-point group, exactly like a
third-party package's; when the package metadata is missing (running from a source tree without
installing) they are registered from :data:`DEFAULT_PLUGINS` instead.

Environment variables:

``FAIRAUDIT_DISABLE_PLUGIN_AUTOLOAD``
    When set to a non-empty value other than ``0``, third-party entry points are not loaded
    (built-ins still are).
``FAIRAUDIT_DISABLE_PLUGINS``
    Comma-separated plugin names to block, like ``--disable-plugin``.
"""

from __future__ import annotations

import difflib
import importlib
import logging
import os
import traceback
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pluggy

from fairaudit import __distribution__, hookspecs
from fairaudit.core.components import (
    Auditor,
    Clusterer,
    Component,
    Preprocessor,
    ReportSection,
)
from fairaudit.errors import ConfigError, DuplicateComponentError, FairauditError, PluginError

log = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "fairaudit"
BUILTIN_DIST = __distribution__

DEFAULT_PLUGINS: tuple[tuple[str, str], ...] = (
    ("builtins_io", "fairaudit_builtins.io"),
    ("builtins_sources", "fairaudit_builtins.sources"),
    ("builtins_clusterers", "fairaudit_builtins.clusterers"),
    ("builtins_auditors", "fairaudit_builtins.auditors"),
    ("builtins_sections", "fairaudit_builtins.sections"),
    ("builtins_explain_section", "fairaudit_builtins.explain_section"),
    ("builtins_encoding", "fairaudit_builtins.encoding"),
    ("builtins_fairden", "fairaudit_builtins.fairden"),
    ("builtins_centroid", "fairaudit_builtins.centroid"),
    ("builtins_consensus", "fairaudit_builtins.consensus"),
    ("builtins_fufs", "fairaudit_builtins.fufs"),
    ("builtins_quality", "fairaudit_builtins.quality"),
    ("builtins_comparison", "fairaudit_builtins.comparison"),
    ("builtins_field", "fairaudit_builtins.field"),
    ("builtins_quality_parity", "fairaudit_builtins.quality_parity"),
)
"""Built-in plugin modules as ``(plugin name, module)``; the same names as their entry points."""

_KINDS: tuple[tuple[str, str, type], ...] = (
    ("preprocessor", "fairaudit_register_preprocessors", Preprocessor),
    ("clusterer", "fairaudit_register_clusterers", Clusterer),
    ("auditor", "fairaudit_register_auditors", Auditor),
    ("section", "fairaudit_register_report_sections", ReportSection),
)


def _env_flag(name: str) -> bool:
    value = os.environ.get(name, "")
    return value not in ("", "0", "false", "False", "no")


def _env_list(name: str) -> tuple[str, ...]:
    return tuple(x.strip() for x in os.environ.get(name, "").split(",") if x.strip())


@dataclass(frozen=True)
class PluginInfo:
    """A registered plugin: its name, the distribution it came from, and whether it is built in."""

    name: str
    package: str
    version: str
    builtin: bool


def make_plugin_manager(
    *, entrypoints: bool = True, blocked: Iterable[str] = ()
) -> pluggy.PluginManager:
    """Return a new plugin manager with the specs, the built-ins and (optionally) entry points.

    ``entrypoints=False`` registers only the built-ins (tests use this). ``blocked`` names plugins
    to skip (``--disable-plugin``); ``FAIRAUDIT_DISABLE_PLUGINS`` adds to it.
    """
    pm = pluggy.PluginManager("fairaudit")
    pm.add_hookspecs(hookspecs)
    blocked_set = set(blocked) | set(_env_list("FAIRAUDIT_DISABLE_PLUGINS"))
    for name in sorted(blocked_set):
        pm.set_blocked(name)
    infos: dict[str, PluginInfo] = {}
    load_external = entrypoints and not _env_flag("FAIRAUDIT_DISABLE_PLUGIN_AUTOLOAD")
    builtin_names = {name for name, _ in DEFAULT_PLUGINS}

    if entrypoints:
        from importlib.metadata import entry_points

        dists: dict[Any, tuple[str, str]] = {}  # one METADATA parse per distribution

        def name_version(dist: Any) -> tuple[str, str]:
            if dist is None:
                return "?", "?"
            key = getattr(dist, "_path", None) or id(dist)
            if key not in dists:
                meta = getattr(dist, "metadata", None)
                dists[key] = ((meta["Name"], meta["Version"]) if meta is not None
                              else (dist.name, dist.version))
            return dists[key]

        for ep in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
            dist = getattr(ep, "dist", None)
            dist_name, dist_version = name_version(dist)
            is_builtin = dist_name == BUILTIN_DIST and ep.name in builtin_names
            if not is_builtin and not load_external:
                continue
            if pm.is_blocked(ep.name) or pm.has_plugin(ep.name):
                continue
            try:
                plugin = ep.load()
            except Exception as exc:  # a broken third-party plugin must be named
                raise PluginError(
                    f"plugin {ep.name!r} from package {dist_name!r} failed to import "
                    f"({ep.value}): {type(exc).__name__}: {exc}. "
                    f"Skip it with --disable-plugin {ep.name} or "
                    f"FAIRAUDIT_DISABLE_PLUGINS={ep.name}"
                ) from exc
            pm.register(plugin, name=ep.name)
            infos[ep.name] = PluginInfo(ep.name, dist_name, dist_version, is_builtin)

    from fairaudit import __version__

    for name, module in DEFAULT_PLUGINS:
        if pm.is_blocked(name) or pm.has_plugin(name):
            continue
        pm.register(importlib.import_module(module), name=name)
        infos[name] = PluginInfo(name, BUILTIN_DIST, __version__, True)

    try:
        pm.check_pending()
    except pluggy.PluginValidationError as exc:
        name = pm.get_name(exc.plugin) or "?"
        raise PluginError(
            f"plugin {name!r} has a hook implementation that matches no fairaudit hook "
            f"({exc}); is a hook name misspelled? Skip it with --disable-plugin {name}"
        ) from exc
    pm.fairaudit_plugin_infos = infos  # type: ignore[attr-defined]
    return pm


# --------------------------------------------------------------------------- registry
@dataclass(frozen=True)
class ComponentInfo:
    """A registered component class and where it came from."""

    kind: str
    name: str
    cls: type
    plugin: str
    package: str
    version: str


class Registry:
    """All components by kind and name. Built once per plugin manager."""

    def __init__(self, components: Sequence[ComponentInfo]):
        self._by_key: dict[tuple[str, str], ComponentInfo] = {}
        for info in components:
            key = (info.kind, info.name)
            if key in self._by_key:
                other = self._by_key[key]
                raise DuplicateComponentError(
                    f"{info.kind} {info.name!r} is registered twice: by plugin {other.plugin!r} "
                    f"(package {other.package}) and by plugin {info.plugin!r} "
                    f"(package {info.package}); disable one with --disable-plugin"
                )
            self._by_key[key] = info

    def names(self, kind: str) -> list[str]:
        return sorted(name for k, name in self._by_key if k == kind)

    def all(self) -> list[ComponentInfo]:
        return sorted(self._by_key.values(), key=lambda i: (i.kind, i.name))

    def find(self, name: str) -> list[ComponentInfo]:
        return [i for (k, n), i in sorted(self._by_key.items()) if n == name]

    def has(self, kind: str, name: str) -> bool:
        return (kind, name) in self._by_key

    def get(self, kind: str, name: str) -> ComponentInfo:
        try:
            return self._by_key[(kind, name)]
        except KeyError:
            raise ConfigError(self.unknown_message(kind, name)) from None

    def unknown_message(self, kind: str, name: str) -> str:
        known = self.names(kind)
        close = difflib.get_close_matches(name, known, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        return f"unknown {kind} {name!r}{hint}; installed: {', '.join(known) or 'none'}"


def build_registry(pm: pluggy.PluginManager) -> Registry:
    """Call the register hooks and check every class they return."""
    infos: Mapping[str, PluginInfo] = getattr(pm, "fairaudit_plugin_infos", {})
    components: list[ComponentInfo] = []
    for kind, hook_name, base in _KINDS:
        hook = getattr(pm.hook, hook_name)
        for impl in hook.get_hookimpls():
            plugin_name = pm.get_name(impl.plugin) or "?"
            pinfo = infos.get(plugin_name, PluginInfo(plugin_name, "?", "?", False))
            result = impl.function(*[_NO_ARGS[a] for a in impl.argnames])
            for cls in result or ():
                _check_component_class(cls, base, kind, plugin_name)
                components.append(
                    ComponentInfo(kind, cls.name, cls, plugin_name, pinfo.package, pinfo.version)
                )
    return Registry(components)


_NO_ARGS: dict[str, Any] = {}


def _check_component_class(cls: Any, base: type, kind: str, plugin: str) -> None:
    if not (isinstance(cls, type) and issubclass(cls, base)):
        raise PluginError(
            f"plugin {plugin!r} registered {cls!r} as a {kind}, but it is not a subclass of "
            f"{base.__module__}.{base.__name__}"
        )
    if not getattr(cls, "name", ""):
        raise PluginError(f"plugin {plugin!r} registered {cls.__name__} without a 'name'")
    if issubclass(cls, Component):
        from fairaudit.core.artifacts import ARTIFACTS

        unknown = (set(cls.requires) | set(cls.provides)) - ARTIFACTS
        if unknown:
            raise PluginError(
                f"{kind} {cls.name!r} from plugin {plugin!r} declares unknown artifact(s) "
                f"{sorted(unknown)}; known: {sorted(ARTIFACTS)}"
            )


# --------------------------------------------------------------------------- host facade
class Host:
    """Typed access to the hooks, so the rest of the host never calls ``pm.hook`` directly."""

    def __init__(self, pm: pluggy.PluginManager):
        self.pm = pm
        self.registry = build_registry(pm)

    @classmethod
    def create(cls, *, entrypoints: bool = True, blocked: Iterable[str] = ()) -> Host:
        return cls(make_plugin_manager(entrypoints=entrypoints, blocked=blocked))

    @property
    def plugins(self) -> Mapping[str, PluginInfo]:
        return getattr(self.pm, "fairaudit_plugin_infos", {})

    def read_table(self, path: str, options: Mapping[str, Any]) -> Any:
        return self.pm.hook.fairaudit_read_table(path=path, options=options)

    def prepare_jinja_env(self, env: Any) -> None:
        self.pm.hook.fairaudit_prepare_jinja_env(env=env)

    def step_finished(self, step: str, kind: str, labelling: str | None, seconds: float) -> None:
        self.pm.hook.fairaudit_step_finished(
            step=step, kind=kind, labelling=labelling, seconds=seconds
        )

    def run_finished(self, run: Any) -> None:
        self.pm.hook.fairaudit_run_finished(run=run)

    def component(self, kind: str, name: str) -> ComponentInfo:
        return self.registry.get(kind, name)


# --------------------------------------------------------------------------- plugin bugs
class PluginBugError(PluginError):
    """A third-party plugin's component or hook raised an unexpected exception: a bug in that
    plugin, not in fairaudit nor in the user's input. Exit code 3 like any bug, but the message
    names the component, its package and version, and how to run without it."""

    exit_code = 3


def plugin_culprit(host: Host, exc: BaseException) -> tuple[str, str] | None:
    """Who raised ``exc``, when it came from a third-party plugin's code, and that plugin's
    name: the innermost frame of the traceback that runs a method of a registered component
    (``auditor 'x' (pkg 1.0, plugin 'p')``), or else a frame of a third-party plugin's own modules
    (a hook: ``plugin 'p' (pkg 1.0)``). ``None`` when the innermost component frame is a built-in
    one's, or no plugin code ran (fairaudit's own bug)."""
    frames = [frame for frame, _ in traceback.walk_tb(exc.__traceback__)][::-1]
    by_class = {info.cls: info for info in host.registry.all()}
    infos = host.plugins

    def third_party(plugin: str) -> PluginInfo | None:
        info = infos.get(plugin, PluginInfo(plugin, "?", "?", False))
        return None if info.builtin else info

    for frame in frames:  # innermost first
        comp = by_class.get(type(frame.f_locals.get("self")))
        if comp is not None:
            info = third_party(comp.plugin)
            return None if info is None else (
                f"{comp.kind} {comp.name!r} ({_package(info)}, plugin {comp.plugin!r})",
                comp.plugin)
    packages: dict[str, PluginInfo] = {}
    for name, module in host.pm.list_name_plugin():
        top = str(getattr(module, "__name__", "") or "").split(".")[0]
        info = third_party(name)
        if info is not None and top and top not in ("fairaudit", "fairaudit_builtins"):
            packages[top] = info
    for frame in frames:
        info = packages.get(str(frame.f_globals.get("__name__", "")).split(".")[0])
        if info is not None:
            return f"plugin {info.name!r} ({_package(info)})", info.name
    return None


def _package(info: PluginInfo) -> str:
    return "package unknown" if info.package == "?" else f"{info.package} {info.version}"


@contextmanager
def blaming_plugins(host: Host) -> Iterator[None]:
    """Turn an unexpected exception raised inside a third-party plugin into a
    :class:`PluginBugError` naming it (the original is chained: ``--debug`` shows its traceback);
    fairaudit's own errors and bugs pass unchanged."""
    try:
        yield
    except FairauditError:
        raise
    except Exception as exc:
        culprit = plugin_culprit(host, exc)
        if culprit is None:
            raise
        who, plugin = culprit
        raise PluginBugError(
            f"{who} raised {type(exc).__name__}: {exc} \u2014 a bug in that plugin, not in "
            f"fairaudit: report it to the plugin's authors (--debug shows the traceback); "
            f"--disable-plugin {plugin} runs without it") from exc
