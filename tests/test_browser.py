"""The report in a real browser: headless Chromium through Playwright.

Needs the Debian ``chromium`` package at /usr/bin/chromium (``.ci/run`` installs it); skipped
otherwise. Playwright's own browser downloads are never used.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fairaudit.report import render as report
from fairaudit.report.results import AuditRun

pytestmark = pytest.mark.browser

CHROMIUM = Path("/usr/bin/chromium")
DATA = Path(__file__).parent / "data"
ARTIFACTS = Path(__file__).parent / "artifacts"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

if not CHROMIUM.exists():  # pragma: no cover - depends on the machine
    pytest.skip("needs /usr/bin/chromium (Debian package 'chromium')", allow_module_level=True)
sync_api = pytest.importorskip("playwright.sync_api")


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=str(CHROMIUM), args=ARGS, headless=True)
        try:
            yield b
        finally:
            b.close()


def _render(name: str, out: Path) -> Path:
    run = AuditRun.from_json(json.loads((DATA / name).read_text(encoding="utf-8")))
    return report.write_html(run, out)


class _Watch:
    """Console messages, page errors, dialogs and every request a page makes."""

    def __init__(self, page) -> None:
        self.errors: list[str] = []
        self.requests: list[str] = []
        self.dialogs: list[str] = []
        self.finished: list[str] = []
        page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: self.errors.append(str(e)))
        page.on("request", lambda r: self.requests.append(r.url))
        page.on("requestfinished", lambda r: self.finished.append(r.url))

        def on_dialog(d):
            self.dialogs.append(d.message)
            d.dismiss()

        page.on("dialog", on_dialog)


def _open(browser, path: Path, *, width: int = 1366):
    context = browser.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    page.set_default_timeout(60_000)
    watch = _Watch(page)
    page.goto(path.resolve().as_uri(), wait_until="load")
    return context, page, watch


def test_report_in_chromium(browser, tmp_path):
    path = _render("sample_audit.json", tmp_path / "report.html")
    context, page, watch = _open(browser, path)
    try:
        assert watch.errors == []
        own = path.resolve().as_uri()
        assert [u for u in watch.requests if u != own and not u.startswith("data:")] == []
        summary = page.locator("#sec-summary")
        assert summary.is_visible()
        assert summary.locator("h2").inner_text() == "Summary"
        assert page.locator(".topbar .badge").inner_text() == "Fail"
        # every chart is laid out with a real size
        boxes = [svg.bounding_box() for svg in page.locator("svg.chart").all()]
        assert boxes and all(b is not None and b["width"] > 100 for b in boxes)
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "report.png"), full_page=True)
        page.emulate_media(media="print")
        assert not page.locator("nav.toc").is_visible()  # print CSS hides the navigation
        page.screenshot(path=str(ARTIFACTS / "report-print.png"), full_page=True)
    finally:
        context.close()


def test_hostile_names_stay_text_in_chromium(browser, tmp_path):
    path = _render("sample_audit_xss.json", tmp_path / "xss.html")
    context, page, watch = _open(browser, path, width=1024)
    try:
        assert watch.dialogs == []
        assert watch.errors == []
        assert page.locator("script").count() == 0
        assert page.locator("img").count() == 0
        text = page.locator("#sec-data").inner_text()
        assert "<script>alert(1)</script>" in text
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "report-xss-narrow.png"), full_page=False)
    finally:
        context.close()


def test_watcher_sees_requests_and_csp_blocks_them(browser, tmp_path):
    """Negative control: the checks above would notice a page that loads something."""
    leaky = tmp_path / "leaky.html"
    leaky.write_text('<!DOCTYPE html><img src="http://127.0.0.1:9/x.png">', encoding="utf-8")
    context, page, watch = _open(browser, leaky)
    try:
        assert any(u.startswith("http://127.0.0.1:9/") for u in watch.requests)
    finally:
        context.close()
    locked = tmp_path / "locked.html"
    locked.write_text(
        f'<!DOCTYPE html><meta http-equiv="Content-Security-Policy" content="{report.CSP}">'
        '<img src="http://127.0.0.1:9/x.png">',
        encoding="utf-8",
    )
    context, page, watch = _open(browser, locked)
    try:
        # the attempt is visible to the watcher, but the policy stops it
        assert not any(u.startswith("http://") for u in watch.finished)
        assert any("Content Security Policy" in e for e in watch.errors)
    finally:
        context.close()


def test_answer_is_above_the_fold_at_1280x800(browser, tmp_path):
    """Issue 23: without thresholds, the verdict card and the answer (per attribute: the
    verdict and the cell that set it) are visible without scrolling; the detail opens on a
    click (<details>, no script)."""
    from test_answer import _segments

    import fairaudit

    run = fairaudit.audit(_segments(), sensitive=["race", "sex"], labels="segment")
    path = report.write_html(run, tmp_path / "answer.html")
    context, page, watch = _open(browser, path, width=1280)
    try:
        page.set_viewport_size({"width": 1280, "height": 800})
        assert watch.errors == []
        card = page.locator("#sec-summary .verdict")
        assert "Unfair" in card.inner_text()
        lines = page.locator("#answer .answer-lines li").all()
        assert len(lines) == 3  # race, sex and their intersection
        for li in lines:
            box = li.bounding_box()
            assert box is not None and box["y"] >= 0 and box["y"] + box["height"] <= 800, box
        assert "\u201cpremium\u201d holds 33 of the 111" in lines[0].inner_text()
        # the full headline table is folded; a click opens it
        table = page.locator("details.headline-metrics table")
        assert not table.is_visible()
        page.locator("details.headline-metrics > summary").click()
        assert table.is_visible()
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "answer.png"))
    finally:
        context.close()
