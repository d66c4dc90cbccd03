"""A real browser downloads a plan report from the Plan page and opens it offline.

The journey opens a plan whose model is named ``<img src=x onerror=alert(1)>``, presses
"Download report", and opens the downloaded file in a fresh browser context in which
every request other than the file itself is aborted: the report must show the seat cap
and draw its charts with nothing fetched, and the model's name must raise no dialog.
Uses the server and browser of ``test_browser`` (Debian's Chromium, never skipped).
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import quote

import pytest
from playwright.sync_api import Browser, Page, Route, expect

from tests.test_browser import (  # noqa: F401 - fixtures used by name
    ARTIFACTS,
    FIRST_RUN_MS,
    HEADLINE,
    UI_TIMEOUT_MS,
    WIDTH,
    chromium,
    headline,
    screenshot,
    server,
    settle,
)

pytestmark = pytest.mark.browser

XSS = "<img src=x onerror=alert(1)>"
PLAN = {
    "points": "1:9.82,2:20.36,4:46.15",
    "model": XSS,
    "card": "laptop-8gb",
    "seeds": "2",
    "duration_s": "5",
    "policies": "oldest-first,batch-all",
    "profile": "office-hours",
    "peak_sessions": "60",
    "price_per_hour": "1.2",
}


def _link(base: str) -> str:
    return f"{base}/?" + "&".join(f"{k}={quote(v, safe=',:')}" for k, v in PLAN.items())


def _download(page: Page, label: str, folder: Path) -> Path:
    button = page.get_by_role("button", name=label)
    button.scroll_into_view_if_needed()
    with page.expect_download(timeout=UI_TIMEOUT_MS) as info:
        button.click()
    download = info.value
    path = folder / download.suggested_filename
    download.save_as(path)
    return path


def test_a_downloaded_report_opens_offline_with_its_charts_and_no_script_from_user_text(
    server: str,  # noqa: F811 - the fixture imported above
    chromium: Browser,  # noqa: F811
    tmp_path: Path,
) -> None:
    dialogs: list[str] = []
    context = chromium.new_context(viewport={"width": WIDTH, "height": 1000}, accept_downloads=True)
    context.set_default_timeout(UI_TIMEOUT_MS)
    try:
        page = context.new_page()
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        page.goto(_link(server))
        expect(page.locator(".st-key-headline h1")).to_have_text(HEADLINE, timeout=FIRST_RUN_MS)
        shown = headline(page)
        settle(page)
        expect(page.get_by_role("heading", name="Demand over the day")).to_be_visible()
        screenshot(page, "plan-demand-report-deploy")
        report = _download(page, "Download report", tmp_path)
        markdown = _download(page, "Download as Markdown", tmp_path)
    finally:
        context.close()
    assert report.suffix == ".html" and markdown.suffix == ".md"
    written = markdown.read_text()
    assert "\\" + XSS in written and not re.search(r"(?<!\\)<img", written)  # "<" escaped

    # Open the file with the network blocked: only the file itself may load.
    offline = chromium.new_context(viewport={"width": WIDTH, "height": 1000})
    offline.set_default_timeout(UI_TIMEOUT_MS)
    fetched: list[str] = []

    def block(route: Route) -> None:
        if route.request.url.startswith("file://"):
            route.continue_()
        else:
            fetched.append(route.request.url)
            route.abort()

    offline.route("**/*", block)
    try:
        page = offline.new_page()
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        page.on(
            "request",
            lambda r: (
                None if r.url.startswith(("file://", "data:", "blob:")) else fetched.append(r.url)
            ),
        )
        page.goto(report.as_uri())
        expect(page.locator("#headline")).to_have_text(shown)
        expect(page.get_by_text("Seats per card", exact=True)).to_be_visible()
        for chart in ("chart-curve", "chart-latency", "chart-fps", "chart-demand"):
            drawn = page.locator(f"#{chart} .main-svg").first
            expect(drawn).to_be_attached()
            # Drawn, not just a placeholder: the chart has plotted traces.
            expect(page.locator(f"#{chart} .scatterlayer .trace").first).to_be_attached()
        expect(page.get_by_text(XSS, exact=False).first).to_be_visible()  # shown as text
        assert page.locator("img").count() == 0
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "report-offline.png"), full_page=True)
        # On a phone (400 px) no table widens the page: wide ones scroll in their box.
        page.set_viewport_size({"width": 400, "height": 900})
        page.wait_for_timeout(300)
        assert page.evaluate("document.documentElement.scrollWidth") <= 400
        page.screenshot(path=str(ARTIFACTS / "report-400px.png"), full_page=True)
    finally:
        offline.close()
    assert dialogs == []
    assert fetched == []
    assert re.match(r"seat-plan-.*\.html$", report.name)
