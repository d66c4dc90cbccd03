"""Which MIG profile, in a real browser: on the Plan page, picking "all profiles of this
card" in the MIG profile control shows every profile of the card in one table, and the
link says so."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from planner.curves.cards import builtin_catalogue
from tests.test_browser import (
    FIRST_RUN_MS,
    HEADLINE,
    UI_TIMEOUT_MS,
    WIDTH,
    screenshot,
    settle,
    streamlit_server,
)
from tests.test_reliability_browser import chrome  # noqa: F401 - the browser fixture

pytestmark = pytest.mark.browser

PLAN = (
    "?points=1:4.69,4:9.29&card=h100-80gb&modes=mig&mig_profile=1g.10gb"
    "&policies=oldest-first&seeds=2&duration_s=5&price_per_hour=4"
)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    folder = tmp_path_factory.mktemp("profiles")
    with streamlit_server(folder, PLANNER_DB=str(Path(folder) / "planner.duckdb")) as base:
        yield base


def choose(page: Page, box: str, option: str) -> None:
    """Pick ``option`` in the select box labelled ``box``: the list opens on a click of its
    combobox, and a click that lands while the page is still settling may not open it."""
    named = page.get_by_test_id("stWidgetLabel").get_by_text(box, exact=True)
    combobox = page.get_by_test_id("stSelectbox").filter(has=named).get_by_role("combobox")
    wanted = page.get_by_role("option", name=option, exact=False)
    for _ in range(3):
        combobox.click()
        try:
            expect(wanted).to_be_visible(timeout=5_000)
        except AssertionError:
            page.keyboard.press("Escape")
            settle(page)
            continue
        wanted.click()
        return
    raise AssertionError(f"the {box!r} box never offered {option!r}")


def test_picking_all_profiles_shows_every_profile_in_one_table(
    served: str,
    chrome: Browser,  # noqa: F811 - the fixture imported above
) -> None:
    card = next(c for c in builtin_catalogue() if c.name == "h100-80gb")
    context = chrome.new_context(viewport={"width": WIDTH, "height": 1000})
    context.set_default_timeout(UI_TIMEOUT_MS)
    try:
        page = context.new_page()
        page.goto(f"{served}/{PLAN}")
        title = page.locator(".st-key-headline h1")
        expect(title).to_have_text(HEADLINE, timeout=FIRST_RUN_MS)
        expect(title).to_contain_text("MIG 1g.10gb")
        settle(page)
        expect(page.locator(".st-key-plan_profiles")).to_have_count(0)

        choose(page, "MIG profile", "all profiles of this card")
        table = page.locator(".st-key-plan_profiles table")
        expect(table).to_be_visible(timeout=FIRST_RUN_MS)
        settle(page)
        expect(page).to_have_url(re.compile(r"mig_profile=all(&|$)"))
        shown = table.locator("tbody tr th, tbody tr td:first-child").all_inner_texts()
        names = [t.strip() for t in shown if t.strip().startswith("MIG ")]
        assert names == [f"MIG {p.name}" for p in card.mig_profiles]
        expect(table).to_contain_text("per seat-month (720 h)")
        screenshot(page, "plan-every-mig-profile")
    finally:
        context.close()
