"""The HTML report: Jinja rendering of the audit JSON (:class:`~fairaudit.report.results.AuditRun`).

The report is rendered from the JSON document alone, so ``fairaudit render audit.json`` gives the
same page as the run that wrote it. The page is one self-contained file: inline CSS and inline SVG
charts (:mod:`fairaudit.report.charts`), no scripts, no external URL, and a Content-Security-Policy that
forbids loading anything.

Sections are :class:`~fairaudit.core.components.ReportSection` classes registered through the
``fairaudit_register_report_sections`` hook (built-ins: ``fairaudit_builtins.sections``). Each is
asked whether it ``applies(run)``, gives plain data through ``context(run)``, and is rendered
with its own ``template``; the page chrome is ``base.html.j2``.

A fresh ``jinja2.Environment`` is built for every render (no module-level state):

* loaders, first match wins: the user's template directories (``template_dirs``), the project's
  ``templates/`` (``fairaudit/templates`` inside an installed wheel, the top-level ``templates/``
  of a source checkout), then the ``templates/`` folder of each section's own top-level package;
* autoescape on for ``.html`` / ``.j2`` templates, ``StrictUndefined``, ``trim_blocks`` and
  ``lstrip_blocks``;
* formatting filters (``fmt_num``, ``fmt_pct``, ``fmt_ci``, ``fmt_int``, ``status_class``, …) so
  templates never compute; plugins add their own through ``fairaudit_prepare_jinja_env``.
"""

from __future__ import annotations

import contextlib
import importlib.resources
import inspect
import json
import logging
import os
import re
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    import jinja2

    from fairaudit.core.plugins import Host
    from fairaudit.report.model import AuditDocument
    from fairaudit.report.results import AuditRun

from fairaudit.errors import ConfigError
from fairaudit.report.results import finite
from fairaudit.report.summary import privacy_notice
from fairaudit.report.words import join_clauses, param_text

log = logging.getLogger(__name__)

__all__ = [
    "CSP",
    "build_env",
    "collect_sections",
    "render_html",
    "write_html",
]

CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:;"
"""Content-Security-Policy of the page: nothing may be loaded; inline CSS and data: images only."""

STATUS_LABELS: dict[str, str] = {
    "pass": "Pass",
    "warn": "Warning",
    "fail": "Fail",
    "not_applicable": "Not judged: no threshold applies",
    "not_evaluated": "Not judged: no threshold set",
    "error": "Error",
}

_DASH = "\u2014"


# ----------------------------------------------------------------------------- filters
def fmt_num(x: Any, digits: int = 3) -> str:
    """A metric value with ``digits`` significant decimals; ``—`` for null / NaN."""
    v = finite(x)
    if v is None:
        return _DASH
    if abs(v) < 1e-12:  # numerical zero (also avoids "-0.000")
        v = 0.0
    if v != 0 and (abs(v) >= 1e5 or abs(v) < 10 ** (-digits)):
        return f"{v:.{digits - 1}e}"
    if float(v).is_integer() and abs(v) < 1e5:
        return f"{int(v)}" if isinstance(x, int) else f"{v:.{digits}f}"
    return f"{v:.{digits}f}"


def fmt_int(x: Any) -> str:
    """A count with thousands separators; ``—`` for null."""
    v = finite(x)
    if v is None:
        return _DASH
    return f"{int(round(v)):,}"


def fmt_pct(x: Any, digits: int = 1) -> str:
    """A share in [0, 1] as a percentage; ``—`` for null."""
    v = finite(x)
    if v is None:
        return _DASH
    return f"{v * 100:.{digits}f}%"


def fmt_ci(ci: Any, digits: int = 3) -> str:
    """A confidence interval ``[lo, hi]``; empty string when there is none."""
    if not ci or not isinstance(ci, Sequence) or len(ci) != 2:
        return ""
    lo, hi = finite(ci[0]), finite(ci[1])
    if lo is None and hi is None:
        return ""
    return f"[{fmt_num(lo, digits)}, {fmt_num(hi, digits)}]"


def fmt_seconds(x: Any) -> str:
    v = finite(x)
    if v is None:
        return _DASH
    if v < 1:
        return f"{v * 1000:.0f} ms"
    if v < 120:
        return f"{v:.2f} s"
    return f"{v / 60:.1f} min"


def fmt_value(x: Any) -> str:
    """Any JSON value as short text (parameters, observed values)."""
    if x is None:
        return _DASH
    if isinstance(x, bool):
        return "true" if x else "false"
    if isinstance(x, float):
        return fmt_num(x, 4)
    if isinstance(x, int | str):
        return str(x)
    return json.dumps(x, sort_keys=True, ensure_ascii=False, default=str)


def fmt_params(params: Any) -> str:
    """``{"k": 3, "fair": True, "x": None}`` -> ``fair: yes, k = 3`` (:func:`param_text`)."""
    if not params:
        return ""
    if not isinstance(params, Mapping):
        return fmt_value(params)
    return param_text(params)


def status_class(status: Any) -> str:
    """CSS class of a status badge: ``badge badge-pass`` etc."""
    s = str(status or "not_evaluated")
    s = s if s in STATUS_LABELS else "not_evaluated"
    return f"badge badge-{s.replace('_', '-')}"


VERDICT_STATUS = {"unfair": "fail", "too little data": "warn", "borderline": "warn",
                  "fair": "pass"}
"""The colour of a verdict (``explain.VERDICTS``): the status whose badge it borrows."""


def verdict_class(verdict: Any) -> str:
    """CSS class of a verdict badge (unfair red, borderline / too little data amber, fair
    green)."""
    return status_class(VERDICT_STATUS.get(str(verdict), "not_evaluated"))


def status_label(status: Any) -> str:
    s = str(status or "not_evaluated")
    return STATUS_LABELS.get(s, s)


def direction_arrow(direction: Any) -> str:
    if direction == "higher_is_better":
        return "\u2191"
    if direction == "lower_is_better":
        return "\u2193"
    return ""


def direction_text(direction: Any) -> str:
    if direction == "higher_is_better":
        return "higher is better"
    if direction == "lower_is_better":
        return "lower is better"
    return ""


def fmt_threshold(th: Any) -> str:
    """A threshold record from the JSON as ``balance@ci ≥ 0.8 [sex]``."""
    if not th:
        return ""
    op = "\u2265" if th.get("bound", "min") == "min" else "\u2264"
    what = str(th.get("metric", "?")) + (f"@{th.get('on')}" if th.get("on", "value") != "value" else "")
    if th.get("attribute"):
        what += f" [{th['attribute']}]"
    if th.get("labelling"):
        what += f" ({th['labelling']})"
    return f"{what} {op} {fmt_num(th.get('value'), 3).rstrip('0').rstrip('.')}"


def group_name(value: Any) -> Any:
    """A group name as the report shows it: a name with leading or trailing whitespace
    (``'deductible  '``; in an intersection ``a|b``, either part's) gets each of those characters
    as a visible ␣, inside quotes, so it cannot pass for ``'deductible'`` (HTML collapses
    spaces); other names as they are."""
    from markupsafe import Markup, escape

    text = "" if value is None else str(value)
    parts = text.split("|")
    if all(p == p.strip() for p in parts):
        return text
    shown = []
    for p in parts:
        lead = len(p) - len(p.lstrip())
        trail = len(p) - len(p.rstrip()) if p.strip() else 0
        shown.append("\u2423" * lead + str(escape(p.strip())) + "\u2423" * trail)
    return Markup('<span class="ws-name" title="{}">\u201c{}\u201d</span>').format(
        "this group name has leading or trailing spaces (shown as \u2423)",
        Markup("|".join(shown)))


def slug(value: Any) -> str:
    """A safe HTML id fragment from any text."""
    s = re.sub(r"[^a-z0-9]+", "-", str(value).lower()).strip("-")
    return s or "x"


FILTERS: dict[str, Any] = {
    "fmt_num": fmt_num,
    "fmt_int": fmt_int,
    "fmt_pct": fmt_pct,
    "fmt_ci": fmt_ci,
    "fmt_seconds": fmt_seconds,
    "fmt_value": fmt_value,
    "fmt_params": fmt_params,
    "fmt_threshold": fmt_threshold,
    "status_class": status_class,
    "status_label": status_label,
    "verdict_class": verdict_class,
    "direction_arrow": direction_arrow,
    "direction_text": direction_text,
    "slug": slug,
    "clauses": join_clauses,
    "group_name": group_name,
}
"""Filters installed in every report environment."""


# ----------------------------------------------------------------------------- environment
def project_template_dirs() -> list[Path]:
    """The built-in template folder(s): inside the installed package first, then the top-level
    ``templates/`` of a source checkout."""
    import fairaudit

    here = Path(fairaudit.__file__).resolve().parent
    return [p for p in (here / "templates", here.parent / "templates") if p.is_dir()]


def _package_template_dir(cls: type) -> Path | None:
    """``<top-level package of cls>/templates`` when that folder exists."""
    top = (cls.__module__ or "").split(".")[0]
    if not top or top == "fairaudit":
        return None
    try:
        root = importlib.resources.files(top)
    except (ModuleNotFoundError, TypeError, ValueError):
        return None
    candidate = root / "templates"
    try:
        if candidate.is_dir():
            return Path(str(candidate))
    except (OSError, NotImplementedError):  # pragma: no cover - exotic loaders
        return None
    return None


TABLE_ROWS = 200
"""Rows a group table of the page shows (group sizes, counts by cluster, small groups); the JSON
has every group. A 200-group zip code in an intersection makes thousands of groups: the page
would be megabytes of rows nobody reads."""


def build_env(
    host: Host | None, *, template_dirs: Sequence[Path | str] = (), sections: Sequence[type] = ()
) -> jinja2.Environment:
    """A new Jinja environment for one render (see the module docstring for the search path).

    ``sections`` are the section classes whose packages' ``templates/`` folders are searched;
    by default those of :func:`collect_sections`.
    """
    import jinja2

    if not sections:
        sections = collect_sections(host)
    dirs: list[Path] = [Path(d) for d in template_dirs]
    for d in dirs:
        if not d.is_dir():
            raise ConfigError(f"--templates {d}: "
                              + ("is not a folder" if d.exists() else "no such folder")
                              + "; give a folder of templates (e.g. a copy of sections/*.j2)")
    dirs += project_template_dirs()
    tops: set[str] = set()  # one look-up per package, not per section
    for cls in sections:
        top = (cls.__module__ or "").split(".")[0]
        if top in tops:
            continue
        tops.add(top)
        d = _package_template_dir(cls)
        if d is not None and d not in dirs:
            dirs.append(d)
    env = jinja2.Environment(
        loader=jinja2.ChoiceLoader([jinja2.FileSystemLoader(str(d)) for d in dirs]),
        autoescape=jinja2.select_autoescape(
            enabled_extensions=("html", "htm", "xml", "j2"), default_for_string=True
        ),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=False,
        bytecode_cache=_bytecode_cache(),
    )
    env.filters.update(FILTERS)
    env.globals["csp"] = CSP
    env.globals["table_rows"] = TABLE_ROWS
    if host is not None:
        host.prepare_jinja_env(env)
    return env


def _bytecode_cache() -> Any:
    """Jinja's compiled templates, kept between runs (compiling the report's templates costs
    about 0.3 s per run): ``$FAIRAUDIT_CACHE_DIR`` (empty: no cache), else
    ``$XDG_CACHE_HOME/fairaudit`` or ``~/.cache/fairaudit``, subfolder ``jinja2``. Entries are
    keyed by the template's source, written atomically; an unwritable folder means no cache."""
    import os

    import jinja2

    root = os.environ.get("FAIRAUDIT_CACHE_DIR")
    if root is None:
        xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        root = os.path.join(xdg, "fairaudit")
    if not root:
        return None
    folder = Path(root) / "jinja2"
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    return jinja2.FileSystemBytecodeCache(str(folder)) if os.access(folder, os.W_OK) else None


# ----------------------------------------------------------------------------- sections
def collect_sections(host: Host | None) -> list[type]:
    """Section classes: from the host's registry, or the built-ins when there is no host."""
    if host is not None:
        return [host.registry.get("section", n).cls for n in host.registry.names("section")]
    from fairaudit_builtins import explain_section
    from fairaudit_builtins import sections as builtin_sections

    return [*builtin_sections.SECTIONS, explain_section.ExplainSection]


def _instantiate(cls: type, claimed: frozenset[str]) -> Any:
    """Sections take no arguments, except that a section whose ``__init__`` accepts
    ``claimed_auditors`` (the generic ``audit_result`` section) is told which auditors other
    sections show (their ``auditors`` class attribute)."""
    try:
        params = inspect.signature(cls).parameters
    except (TypeError, ValueError):  # pragma: no cover
        params = {}
    if "claimed_auditors" in params:
        return cls(claimed_auditors=claimed)
    return cls()


def _render_sections(env: jinja2.Environment, run: AuditRun, classes: Sequence[type]) -> list:
    from markupsafe import Markup

    claimed = frozenset(a for cls in classes for a in getattr(cls, "auditors", ()) or ())
    ordered = sorted(classes, key=lambda c: (getattr(c, "order", 500), c.name))
    blocks = []
    for cls in ordered:
        section = _instantiate(cls, claimed)
        if not section.applies(run):
            continue
        ctx = dict(section.context(run))
        template = env.get_template(cls.template)
        html = template.render(section={"name": cls.name, "title": cls.title}, **ctx)
        blocks.append(
            {
                "name": cls.name,
                "id": "sec-" + slug(cls.name),
                "title": cls.title or cls.name,
                "html": Markup(html),
            }
        )
    return blocks


def render_html(
    run: AuditRun | AuditDocument, host: Host | None = None, *,
    template_dirs: Sequence[Path | str] = ()
) -> str:
    """The report page for ``run`` (an :class:`AuditRun` or the typed
    :class:`~fairaudit.report.model.AuditDocument`) as a string (deterministic: same JSON =>
    same HTML)."""
    model = sys.modules.get("fairaudit.report.model")  # not imported: run is no AuditDocument
    if model is not None and isinstance(run, model.AuditDocument):
        run = run.to_run()
    classes = collect_sections(host)
    env = build_env(host, template_dirs=template_dirs, sections=classes)
    with _user_template_errors(template_dirs):
        return _render_page(env, run, classes)


@contextlib.contextmanager
def _user_template_errors(template_dirs: Sequence[Path | str]) -> Iterator[None]:
    """An error in a template of the user's ``--templates`` folders (a syntax error, an
    undefined name) is a :class:`ConfigError` naming the template and line; an error in
    fairaudit's own templates passes unchanged (a bug)."""
    import traceback

    import jinja2

    roots = [os.path.realpath(d) + os.sep for d in template_dirs]
    try:
        yield
    except jinja2.TemplateError as exc:
        where: tuple[str, int | None] | None = None
        if isinstance(exc, jinja2.TemplateSyntaxError) and exc.filename:
            where = (exc.filename, exc.lineno)
        else:
            for frame in reversed(traceback.extract_tb(exc.__traceback__)):
                if any(os.path.realpath(frame.filename).startswith(r) for r in roots):
                    where = (frame.filename, frame.lineno)
                    break
        if where is None or not any(os.path.realpath(where[0]).startswith(r) for r in roots):
            raise
        line = f", line {where[1]}" if where[1] else ""
        message = getattr(exc, "message", None) or str(exc)
        raise ConfigError(f"--templates: template {where[0]}{line}: {type(exc).__name__}: "
                          f"{message}") from None


def _render_page(env: jinja2.Environment, run: AuditRun, classes: Sequence[type]) -> str:
    blocks = _render_sections(env, run, classes)
    doc = run.doc
    inp = doc.get("input", {}) or {}
    tool = doc.get("tool", {}) or {}
    from fairaudit.report.answer import overall

    page = env.get_template("base.html.j2").render(
        title="fairaudit report \u2014 " + str(inp.get("path") or "audit"),
        status=doc.get("status", "not_evaluated"),
        verdict=None if doc.get("gates") else overall(doc),
        input_path=inp.get("path"),
        rows_audited=inp.get("rows_audited"),
        labellings=[lab.get("name") for lab in doc.get("labellings", [])],
        tool_version=tool.get("version", ""),
        created=(doc.get("timing") or {}).get("created"),
        privacy_notice=privacy_notice(doc),
        sections=blocks,
        privacy=doc.get("privacy"),
    )
    return page.rstrip() + "\n"


def write_html(
    run: AuditRun,
    path: Path | str,
    host: Host | None = None,
    *,
    template_dirs: Sequence[Path | str] = (),
) -> Path:
    """Render and write the report atomically (:func:`fairaudit.report.outputs.write_output`:
    a temporary file in the same folder, then ``os.replace``; only a regular file is replaced):
    readers never see a half-written page, and a failed render leaves an existing report
    untouched. Returns the path written."""
    from fairaudit.report.outputs import write_output

    html = render_html(run, host, template_dirs=template_dirs)
    return write_output(path, html)
