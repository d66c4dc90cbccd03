"""The Plan page and the report on a phone (400 px) with the A100 plan: every column of
the table of options can be reached, the page says how, and the sentence on why the next
seat fails keeps a readable width."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import Browser, expect

from planner.links.urls import decode
from planner.plan.params import PlanParams
from planner.plan.recommend import recommend
from planner.plan.resolve import plan_inputs
from planner.report.document import ReportContext
from planner.report.html import html_report
from planner.store.repository import Store
from tests.test_browser import (  # noqa: F401 - fixtures used by name
    A100_RESNET50,
    FIRST_RUN_MS,
    HEADLINE,
    UI_TIMEOUT_MS,
    chromium,
    key_columns_in_view,
    screenshot,
    server,
    settle,
)

pytestmark = pytest.mark.browser

PHONE = 400
A100_PLAN = (f"points={A100_RESNET50}&card=a100-80gb&policies=batch-all,deadline,oldest-first,"
             "max-batch&seeds=2&duration_s=5")  # fmt: skip
READABLE_PX = 180  # about 25 characters a line of the table's text


def test_the_table_of_options_reads_on_a_phone(server: str, chromium: Browser) -> None:  # noqa: F811
    context = chromium.new_context(viewport={"width": PHONE, "height": 900})
    context.set_default_timeout(UI_TIMEOUT_MS)
    try:
        page = context.new_page()
        page.goto(f"{server}/?{A100_PLAN}")
        expect(page.locator(".st-key-headline h1")).to_have_text(HEADLINE, timeout=FIRST_RUN_MS)
        settle(page)
        page.locator(".st-key-plan_options").scroll_into_view_if_needed()
        key_columns_in_view(page, "plan_options", PHONE)
        # Wider than the screen: the page says the table scrolls sideways.
        expect(page.get_by_text("the table scrolls sideways", exact=False)).to_be_visible()
        table = page.locator(".st-key-plan_options table")
        headers = table.locator("thead th")
        reason = headers.filter(has_text="next seat fails because")
        box = reason.bounding_box()
        assert box is not None and box["width"] >= READABLE_PX, box
        # Every column can be scrolled into view inside the table's own box.
        last = headers.last
        last.scroll_into_view_if_needed()
        edge = last.bounding_box()
        assert edge is not None and edge["x"] >= 0 and edge["x"] + edge["width"] <= PHONE, edge
        assert page.evaluate("document.documentElement.scrollWidth") <= PHONE
        screenshot(page, "plan-table-phone")
    finally:
        context.close()


def test_a_report_reads_on_a_phone(chromium: Browser, tmp_path: Path) -> None:  # noqa: F811
    params, _ = decode(PlanParams, {"points": A100_RESNET50, "card": "a100-80gb",
                                     "policies": "batch-all,oldest-first,max-batch",
                                     "peak_sessions": "100", "price_per_hour": "4",
                                     "seeds": "2", "duration_s": "5"})  # fmt: skip
    inputs = plan_inputs(params, Store(tmp_path / "planner.duckdb"))
    report = tmp_path / "report.html"
    report.write_text(html_report(ReportContext(params, inputs, recommend(inputs.request))))
    context = chromium.new_context(viewport={"width": PHONE, "height": 900})
    try:
        page = context.new_page()
        page.goto(report.as_uri())
        table = page.locator("table").filter(has_text="next seat fails because")
        reason = table.locator("thead th").filter(has_text="next seat fails because")
        box = reason.bounding_box()
        assert box is not None and box["width"] >= READABLE_PX, box
        assert page.evaluate("document.documentElement.scrollWidth") <= PHONE
        last = table.locator("thead th").last
        last.scroll_into_view_if_needed()
        edge = last.bounding_box()
        assert edge is not None and edge["x"] >= 0 and edge["x"] + edge["width"] <= PHONE, edge
    finally:
        context.close()
