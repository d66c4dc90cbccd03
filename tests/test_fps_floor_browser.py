"""The Plan page in a real browser: a frame-rate floor equal to the source frame rate
("every frame, no drops") keeps the seats the default floor gives, because the frame a
session still has in flight when a run ends does not count against it."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from tests.test_browser import (  # noqa: F401 - server, chromium and page are fixtures
    FIRST_RUN_MS,
    HEADLINE,
    chromium,
    headline,
    page,
    rerun_ms,
    server,
    settle,
)

pytestmark = pytest.mark.browser


def test_a_floor_equal_to_the_source_rate_keeps_every_seat(
    server: str,  # noqa: F811 - the fixture imported above
    page: Page,  # noqa: F811
) -> None:
    page.goto(f"{server}/")
    expect(page.locator(".st-key-headline h1")).to_have_text(HEADLINE, timeout=FIRST_RUN_MS)
    settle(page)
    first = headline(page)
    source = page.get_by_role("spinbutton", name="Source frame rate (fps)")
    expect(source).to_have_value("30")

    floor = page.get_by_role("spinbutton", name="Frame-rate floor (fps)")
    floor.fill("30")
    floor.press("Enter")
    settle(page)
    expect(page).to_have_url(re.compile(r"min_fps=30(&|$)"))
    assert headline(page) == first
    expect(page.get_by_text("above the source frame rate", exact=False)).to_have_count(0)

    # A floor above what the sources send is warned about.
    before = headline(page)
    floor.fill("31")
    floor.press("Enter")
    rerun_ms(page, before)
    expect(page.get_by_text("above the source frame rate", exact=False)).to_be_visible()
