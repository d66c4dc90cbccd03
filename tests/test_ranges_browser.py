"""The Plan page in a real browser: where the seat cap is a range, the GPUs for the peak
and every cost that follows from it are ranges too, with the likely figure (the fitted
curve's) beside them, never the fitted cap's figure alone."""

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
    server,
    settle,
)

pytestmark = pytest.mark.browser

# Two points leave the curve beyond batch 3 uncertain: the cap is a range.
LINK = "/?points=1:8,3:20&seeds=2&duration_s=5&peak_sessions=200&price_per_hour=2.5"
SPAN = r"([\d,]+)–([\d,]+), likely ([\d,]+)"
MONEY_SPAN = r"\$([\d.,]+)–\$([\d.,]+) per seat-hour, likely \$([\d.,]+)"


def ordered(match: re.Match[str] | None) -> tuple[float, float, float]:
    assert match is not None
    low, high, likely = (float(g.replace(",", "")) for g in match.groups())
    assert low < high and low <= likely <= high, match.group(0)
    return low, likely, high


def test_a_ranged_cap_carries_its_range_into_gpus_and_cost(
    server: str,  # noqa: F811 - the fixture imported above
    page: Page,  # noqa: F811
) -> None:
    page.goto(f"{server}{LINK}")
    expect(page.locator(".st-key-headline h1")).to_have_text(HEADLINE, timeout=FIRST_RUN_MS)
    settle(page)
    seats = re.match(r"(\d+)–(\d+) seats per card", headline(page))
    assert seats is not None, headline(page)
    few, many = int(seats.group(1)), int(seats.group(2))

    cost = page.locator(".st-key-plan_cost").inner_text()
    fitted = re.search(r"÷ \d+–\d+ seats, likely (\d+)", cost)
    assert fitted is not None, cost
    seats_likely = int(fitted.group(1))
    assert few <= seats_likely <= many

    gpus = page.get_by_test_id("stMetric").filter(has_text="GPUs for 200 at peak")
    expect(gpus).to_have_count(1)
    # Fewer seats per card need more cards: each end of the GPUs is the other end's.
    assert ordered(re.search(SPAN, gpus.inner_text())) == (
        -(-240 // many),
        -(-240 // seats_likely),
        -(-240 // few),
    )
    assert ordered(re.search(MONEY_SPAN, cost)) == (
        round(2.5 / many, 2),
        round(2.5 / seats_likely, 2),
        round(2.5 / few, 2),
    )
    fleet = r"the fleet costs \$[\d.,]+–\$[\d.,]+ per hour, likely \$[\d.,]+"
    assert re.search(fleet, cost), cost
