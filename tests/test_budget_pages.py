"""Pages run every computation under the server's budget and say so plainly when a link
asks for more, with the command line that runs it without one."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from dashboard.navigation import PAGES

REPO = Path(__file__).resolve().parent.parent
# The crafted link of the reliability report: a card so fast that every session count
# passes, 64 seeds of 600 s each, up to 256 sessions.
HEAVY = {"points": "1:0.001,2:0.001,4:0.002", "seeds": "64", "duration_s": "600",
         "max_sessions": "256"}  # fmt: skip


@pytest.fixture
def app(db_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[AppTest]:
    monkeypatch.setenv("PLANNER_BUDGET_FRAMES", "10000000")
    st.cache_resource.clear()
    yield AppTest.from_file(str(REPO / "app.py"), default_timeout=120)
    st.cache_resource.clear()


def open_page(at: AppTest, script: str, query: dict[str, str]) -> AppTest:
    for key, value in query.items():
        at.query_params[key] = value
    if script != PAGES[0].script:
        at.switch_page(f"dashboard/pages/{script}")
    at.run()
    assert not at.exception, at.exception
    return at


def test_a_plan_over_the_budget_says_so_and_gives_the_command(app: AppTest) -> None:
    open_page(app, "plan.py", HEAVY)
    (warning,) = [w.value for w in app.warning if "computation budget" in w.value]
    assert "10 million budget" in warning and "command line" in warning
    (command,) = [c.value for c in app.code if c.value.startswith("planner recommend")]
    assert "--points 1:0.001,2:0.001,4:0.002" in command
    assert "--seeds 64 --duration-s 600 --max-sessions 256" in command
    assert not app.title  # no headline from a half-finished search


def test_a_simulation_over_the_budget_says_so(app: AppTest) -> None:
    open_page(app, "simulate.py", {"sessions": "1000", "duration_s": "600", "fps": "30"})
    assert any("computation budget" in w.value for w in app.warning)
    (command,) = [c.value for c in app.code if c.value.startswith("planner simulate")]
    assert "--sessions 1000" in command and "--duration-s 600" in command


def test_plans_within_the_budget_are_untouched(app: AppTest) -> None:
    open_page(app, "plan.py", {"seeds": "2", "duration_s": "5"})
    assert not [w for w in app.warning if "budget" in w.value]
    assert app.title and app.title[0].value.startswith("3 seats per card")


def test_a_comparison_over_the_budget_says_so_and_gives_the_command(app: AppTest) -> None:
    open_page(app, "compare.py", {"seeds": "64", "duration_s": "600", "max_sessions": "256"})
    (warning,) = [w.value for w in app.warning if "computation budget" in w.value]
    assert "comparison" in warning
    assert "budget.** It needs more simulation than this server allows" in warning
    assert "It it" not in warning and "allows for one request" in warning
    (command,) = [c.value for c in app.code if c.value.startswith("planner compare-cards")]
    assert "--seeds 64 --duration-s 600 --max-sessions 256" in command


def test_a_comparison_of_cards_over_the_day_over_the_budget_says_so(
    app: AppTest, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The plan fits the budget (about 0.8 million frames); planning the model's four other
    # cards for the cost-per-day comparison takes about 1.8 million more.
    monkeypatch.setenv("PLANNER_BUDGET_FRAMES", "1000000")
    query = {"seeds": "4", "profile": "office-hours", "peak_sessions": "100"}
    open_page(app, "plan.py", query)
    assert app.title and app.title[0].value.startswith("3 seats per card")
    (warning,) = [w.value for w in app.warning if "computation budget" in w.value]
    assert "comparison of cards" in warning
    (command,) = [c.value for c in app.code if c.value.startswith("planner fleet")]
    assert "--profile office-hours" in command and command.endswith("--compare-cards")
