"""Links the Plan page writes, in a real browser: the address bar holds parameter values
only, whatever the widgets went through (a select box hands the label it showed back to
the server when its choices change), and the measure-next advice on the page stays
within the batch sizes the plan can run."""

from __future__ import annotations

import re
from collections.abc import Iterator
from urllib.parse import parse_qs, urlsplit

import pytest
from playwright.sync_api import Browser, Page, expect

from planner.curves.curve import Curve, Point
from planner.sim.policies import POLICIES
from planner.sim.scenario import MODES
from planner.store.repository import Store
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

H100 = Curve(
    model="ball-detector",
    card="h100-80gb",
    precision="fp16",
    resolution="512x288",
    points=(Point(1, 4.69), Point(4, 9.29)),
)
QUICK = "seeds=1&duration_s=5"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The dashboard on a store that also holds an H100 curve; its base URL."""
    folder = tmp_path_factory.mktemp("links")
    db = folder / "planner.duckdb"
    with Store(db) as store:
        store.add_curves([H100])
    with streamlit_server(folder, PLANNER_DB=str(db)) as base:
        yield base


@pytest.fixture
def tab(chrome: Browser) -> Iterator[Page]:  # noqa: F811 - the fixture imported above
    context = chrome.new_context(viewport={"width": WIDTH, "height": 1000})
    context.set_default_timeout(UI_TIMEOUT_MS)
    expect.set_options(timeout=UI_TIMEOUT_MS)
    try:
        yield context.new_page()
    finally:
        context.close()


def wait_for_plan(page: Page) -> None:
    expect(page.locator(".st-key-headline h1")).to_have_text(HEADLINE, timeout=FIRST_RUN_MS)
    settle(page)


def choose(page: Page, kind: str, label: str, option: str) -> None:
    """Pick ``option`` in the select box (or multiselect) labelled exactly ``label`` (the
    page has "Batch curve" and a co-tenant's "Its batch curve") as a person does: open
    it, type, press Enter; then wait for the plan."""
    named = page.get_by_test_id("stWidgetLabel").get_by_text(label, exact=True)
    page.get_by_test_id(kind).filter(has=named).locator("input").click()
    page.keyboard.type(option)
    page.keyboard.press("Enter")
    page.keyboard.press("Escape")
    wait_for_plan(page)


def test_an_h100_curve_with_mig_writes_only_parameter_values_into_its_link(
    served: str, tab: Page
) -> None:
    tab.goto(f"{served}/?{QUICK}")
    wait_for_plan(tab)
    choose(tab, "stSelectbox", "Batch curve", "h100-80gb")
    expect(tab.get_by_role("combobox", name="Batch curve")).to_have_value(re.compile("h100"))
    screenshot(tab, "links-h100")
    expect(tab.get_by_text("Option to deploy")).to_be_visible()
    choose(tab, "stMultiSelect", "Sharing modes", "mig")
    expect(tab).to_have_url(re.compile(r"mig_profile="))
    link = tab.url
    screenshot(tab, "links-h100-mig")
    query = parse_qs(urlsplit(link).query)
    for value in query.get("deploy_option", []):
        policy, _, mode = value.partition(",")
        assert policy in POLICIES and mode in MODES, f"the link holds deploy_option={value!r}"

    # Whoever opens the link gets the same page, nothing ignored.
    tab.goto(link)
    wait_for_plan(tab)
    expect(tab.get_by_text("Parts of this link were ignored")).to_have_count(0)


def test_the_plan_page_advises_a_batch_its_one_frame_mps_plan_can_run(
    served: str, tab: Page
) -> None:
    # MPS clients of at most 11 sessions, served one frame at a time: every batch holds
    # one frame, so no advice may name a larger batch (the page used to say 64).
    tab.goto(
        f"{served}/?points=1:4.69,4:9.29&card=h100-80gb&modes=mps&policies=oldest-first"
        f"&max_sessions=11&{QUICK}"
    )
    wait_for_plan(tab)
    advice = tab.get_by_text(re.compile(r"^(Measure batch \d+ next|No batch size is worth)"))
    expect(advice).to_be_visible()
    text = advice.inner_text()
    named = re.search(r"Measure batch (\d+) next", text)
    assert named is None or int(named[1]) == 1, text
    assert "relative to this plan" in text and "it runs batch 1 only" in text, text
