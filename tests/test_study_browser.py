"""The Studies page in a real browser: a study stored by the command line on the
dashboard's own store draws its heatmap, and a cell's link opens its Plan with the cell's
seats."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, expect

from tests.test_browser import (
    ARTIFACTS,
    UI_TIMEOUT_MS,
    WIDTH,
    settle,
    streamlit_server,
)
from tests.test_reliability_browser import chrome  # noqa: F401 - the browser fixture
from tests.test_study import SMALL

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    folder = tmp_path_factory.mktemp("studies")
    db = folder / "planner.duckdb"
    with streamlit_server(folder, PLANNER_DB=str(db)) as base:
        yield base, db


def test_a_stored_study_draws_its_heatmap_and_opens_a_cells_plan(
    served: tuple[str, Path],
    chrome: Browser,  # noqa: F811 - the fixture imported above
    tmp_path: Path,
) -> None:
    base, db = served
    spec = tmp_path / "small.json"
    spec.write_text(json.dumps(SMALL))
    done = subprocess.run(
        [sys.executable, "-m", "planner", "--db", str(db), "study", str(spec), "--json"],
        capture_output=True, text=True, timeout=600,
        env={**os.environ, "PLANNER_DB_WAIT_S": "120"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]

    context = chrome.new_context(viewport={"width": WIDTH, "height": 1000})
    context.set_default_timeout(UI_TIMEOUT_MS)
    page = context.new_page()
    try:
        page.goto(f"{base}/studies")
        expect(page.get_by_role("heading", name="Studies")).to_be_visible()
        chart = page.locator(".st-key-study_heatmap, [data-testid='stPlotlyChart']").first
        expect(chart.locator(".main-svg").first).to_be_attached()
        expect(page.locator(".heatmaplayer, .hm").first).to_be_attached()
        settle(page)
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "studies.png"), full_page=True)

        # The first cell's Plan link (the table's link column) opens its Plan.
        link = page.get_by_role("link", name="Open its plan")
        href = link.get_attribute("href")
        assert href and href.startswith("/?")
        plan = context.new_page()
        plan.goto(base + href)
        headline = plan.locator(".st-key-headline h1")
        expect(headline).to_have_text(__import__("re").compile(r"seats? per card"), timeout=180_000)
        with __import__("planner.store.repository", fromlist=["Store"]).Store(db) as store:
            from planner.studies.store import load_study

            _study, members = load_study(store, "small")
        first = members[0].result
        assert first is not None
        assert headline.inner_text().startswith(f"{first.outputs['seats']} seat")
    finally:
        context.close()
