"""A chain of models, in a real browser: on the Plan page, adding a stored classifier with
3 crops per frame to the built-in detector curve lowers the seat count, the reason names
the chain, and the page's link reopens the plan with the chain."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, expect

from planner.curves.curve import Point, make_curve
from planner.links.urls import encode
from planner.plan.params import PlanParams
from planner.plan.recommend import recommend
from planner.plan.resolve import plan_inputs
from planner.store.repository import Store
from tests.test_browser import FIRST_RUN_MS, UI_TIMEOUT_MS, WIDTH, settle, streamlit_server
from tests.test_dashboard_pages import headline_of
from tests.test_mig_profiles_browser import choose
from tests.test_reliability_browser import chrome  # noqa: F401 - the browser fixture

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, dict[str, str]]]:
    """The dashboard on a store that holds a classifier curve beside the built-in ones; its
    base URL, and the headlines the library gives the plan without and with the chain
    (computed before the server opens the store)."""
    folder = tmp_path_factory.mktemp("chain")
    path = Path(folder) / "planner.duckdb"
    with Store(path) as db:
        detector = next(c.id for c in db.curves() if c.card == "server-24gb")
        points = [Point(1, 1.5), Point(8, 3.0), Point(32, 8.0)]
        curve = make_curve(
            model="classifier",
            card="server-24gb",
            precision="fp16",
            resolution="224x224",
            points=points,
        )
        (classifier,) = db.add_curves([curve])
        alone = PlanParams(
            curve=detector, budget_ms=100.0, policies=("batch-all",), seeds=2, duration_s=5.0
        )
        chained = PlanParams(**{**vars(alone), "cascade": (f"{classifier.id}:3",)})
        heads = {
            "alone": headline_of(recommend(plan_inputs(alone, db).request)),
            "chained": headline_of(recommend(plan_inputs(chained, db).request)),
            "query": "?" + "&".join(f"{k}={v}" for k, v in encode(alone).items()),
        }
    with streamlit_server(folder, PLANNER_DB=str(path)) as base:
        yield base, heads


def _seats(headline: str) -> int:
    found = re.match(r"^(\d+)", headline)
    assert found is not None, headline
    return int(found[1])


def test_adding_a_classifier_to_the_chain_lowers_the_seats_and_the_link_keeps_it(
    served: tuple[str, dict[str, str]],
    chrome: Browser,  # noqa: F811 - the fixture imported above
) -> None:
    base, heads = served
    assert _seats(heads["chained"]) < _seats(heads["alone"])
    context = chrome.new_context(viewport={"width": WIDTH, "height": 1000})
    context.set_default_timeout(UI_TIMEOUT_MS)
    try:
        page = context.new_page()
        page.goto(f"{base}/{heads['query']}")
        title = page.locator(".st-key-headline h1")
        expect(title).to_have_text(heads["alone"], timeout=FIRST_RUN_MS)
        expect(page.locator(".st-key-headline")).not_to_contain_text("chain of models")
        settle(page)

        page.get_by_text("Add a model to the chain").click()
        choose(page, "Its batch curve", "classifier")
        settle(page)
        crops = page.get_by_test_id("stNumberInput").filter(has_text="Count or mean")
        crops.locator("input").fill("3")
        crops.locator("input").press("Enter")
        settle(page)
        page.get_by_role("button", name="Add to the chain").click()
        expect(title).to_have_text(heads["chained"], timeout=FIRST_RUN_MS)
        expect(page.locator(".st-key-headline")).to_contain_text("the chain of models binds")
        settle(page)
        expect(page).to_have_url(re.compile(r"cascade=[a-z0-9]{12}(%3A|:)3(&|$)"))

        again = context.new_page()
        again.goto(page.url)
        expect(again.locator(".st-key-headline h1")).to_have_text(
            heads["chained"], timeout=FIRST_RUN_MS
        )
        expect(again.get_by_text("on 3 crops per input")).to_be_visible()
    finally:
        context.close()
