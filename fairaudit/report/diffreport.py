"""HTML pages of ``fairaudit compare`` and ``fairaudit history``.

Both pages use the report's chrome (``base.html.j2``: the same strict Content-Security-Policy,
inline CSS, no scripts, charts as inline SVG from :mod:`fairaudit.report.charts`) and are rendered from
their JSON documents alone. The comparison's partial (``sections/comparison.html.j2``) is also the
"Comparison with the baseline" section of an audit report written with ``--baseline``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["comparison_view", "render_comparison_html", "render_history_html"]


def _label(c: Mapping[str, Any]) -> str:
    attr = f"[{c['attribute']}]" if c.get("attribute") else ""
    return f"{c.get('labelling')} {c.get('metric')}{attr}"


def comparison_view(cmp: Mapping[str, Any], *, chart: bool = True) -> dict[str, Any]:
    """Plain data for ``sections/comparison.html.j2`` from a comparison document."""
    from fairaudit.report import charts

    changes = list(cmp.get("changes") or [])
    headline = [c for c in changes if c.get("headline")]
    other = [c for c in changes if not c.get("headline")]
    svg = None
    drawn = [c for c in headline if c.get("delta") is not None]
    if chart and drawn:
        colours = []
        for c in drawn:
            if c.get("significant") and c.get("direction") == "worse":
                colours.append(charts.PALETTE[3])
            elif c.get("significant") and c.get("direction") == "better":
                colours.append(charts.PALETTE[2])
            else:
                colours.append(charts.NOISE_COLOR)
        svg = charts.hbar(
            [_label(c) for c in drawn], [c["delta"] for c in drawn],
            errors=[c.get("ci") for c in drawn], reference=0.0,
            colors=colours, xlabel="change (current − baseline)",
            title="Headline changes (red: significantly worse, green: significantly better)",
            max_bars=60,
        )
    per_cluster: dict[str, list[dict[str, Any]]] = {}
    for c in headline:
        for row in c.get("clusters") or []:
            per_cluster.setdefault(str(c.get("labelling")), []).append(
                {"metric": c.get("metric"), "attribute": c.get("attribute"), **row})
    alignment = [dict(a, clusters=per_cluster.get(str(a.get("labelling")), []))
                 for a in cmp.get("alignment") or []]
    return {
        "status": cmp.get("status", "not_evaluated"),
        "summary": cmp.get("summary") or {},
        "baseline": cmp.get("baseline") or {},
        "current": cmp.get("current") or {},
        "interval": cmp.get("interval") or {},
        "gate": cmp.get("gate") or {},
        "notes": list(cmp.get("notes") or []),
        "chart": svg,
        "headline": headline,
        "other": other,
        "alignment": alignment,
        "only_in_baseline": list(cmp.get("only_in_baseline") or []),
        "only_in_current": list(cmp.get("only_in_current") or []),
    }


def _privacy_runs(runs: Sequence[tuple[str, Mapping[str, Any] | None]]) -> list[dict[str, Any]]:
    """The published releases among ``runs`` ((label, privacy summary) pairs) for the page's
    banner (the report's partial, ``partials/privacy_banner.html.j2``)."""
    return [{"label": label, **p} for label, p in runs if (p or {}).get("mode") == "dp"]


def _page(title: str, status: str, blocks: list[dict[str, Any]], *, input_path: str | None,
          created: str | None, privacy_runs: Sequence[Mapping[str, Any]] = ()) -> str:
    from fairaudit import __version__
    from fairaudit.report.render import build_env

    env = build_env(None)
    return env.get_template("base.html.j2").render(
        title=title, status=status, input_path=input_path, rows_audited=None, labellings=[],
        tool_version=__version__, created=created, sections=blocks,
        privacy_runs=list(privacy_runs),
    ).rstrip() + "\n"


def _block(env_template: str, name: str, title: str, **ctx: Any) -> dict[str, Any]:
    from markupsafe import Markup

    from fairaudit.report.render import build_env, slug

    env = build_env(None)
    html = env.get_template(env_template).render(section={"name": name, "title": title}, **ctx)
    return {"name": name, "id": "sec-" + slug(name), "title": title, "html": Markup(html)}


def render_comparison_html(cmp: Mapping[str, Any]) -> str:
    """The page of ``fairaudit compare --out diff.html``."""
    block = _block("sections/comparison.html.j2", "comparison", "Comparison with the baseline",
                   cmp=comparison_view(cmp))
    cur = cmp.get("current") or {}
    base = cmp.get("baseline") or {}
    return _page("fairaudit comparison \u2014 " + str(cur.get("file") or cur.get("input_path")),
                 str(cmp.get("status", "not_evaluated")), [block],
                 input_path=cur.get("input_path"), created=cur.get("created"),
                 privacy_runs=_privacy_runs([
                     (f"baseline {base.get('file') or ''}".strip(), base.get("privacy")),
                     (f"current {cur.get('file') or ''}".strip(), cur.get("privacy"))]))


def render_history_html(hist: Mapping[str, Any]) -> str:
    """The page of ``fairaudit history --out history.html``."""
    from fairaudit.ops.history import history_view

    view = history_view(hist)
    block = _block("sections/history.html.j2", "history", "History of the audits", hist=view)
    runs = hist.get("runs") or []
    last = runs[-1] if runs else {}
    return _page("fairaudit history \u2014 " + str(last.get("input_path") or "audits"),
                 str(last.get("status") or "not_evaluated"), [block],
                 input_path=last.get("input_path"), created=last.get("date"),
                 privacy_runs=_privacy_runs([(f"{r.get('date')} {r.get('file') or ''}".strip(),
                                              r.get("privacy")) for r in runs]))
