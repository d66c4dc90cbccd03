"""The answer in one plain sentence for whoever decides (``planner.plan.answer.plain``):
seats, the source's frame rate, the budget and what one more camera would get, read off
the run the cap search made; shown under the Plan page's headline, above the calibration
control, with the cost per seat-month beside the cost per seat-hour."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from streamlit.testing.v1 import AppTest

from planner import display
from planner.demand.profiles import HOURS_PER_MONTH
from planner.plan.answer import ordinal, plan_answer
from planner.plan.recommend import recommend
from planner.plan.request import Criteria
from tests.conftest import run
from tests.test_plan_answer import LAPTOP, quick, seen


def test_the_sentence_names_seats_source_rate_budget_and_the_next_cameras_frame_rate() -> None:
    result = recommend(quick(LAPTOP, policies=("oldest-first",)))
    best = result.recommended
    assert best is not None and best.failures[0].constraint == "fps"
    failing = best.history[-1]
    assert failing.sessions == best.cap + 1
    plain = plan_answer(result).plain
    assert plain.startswith(f"Each card serves {best.seats} live cameras at 30 fps")
    assert "99% of answers within 50 ms" in plain
    assert plain.endswith(
        f"a {ordinal(best.cap + 1)} camera would leave the slowest at "
        f"{display.fps(failing.min_fps)}."
    )


def test_when_latency_stops_the_next_camera_the_sentence_gives_its_latency() -> None:
    result = recommend(
        quick(LAPTOP, policies=("batch-all",), criteria=Criteria(budget_ms=60.0, min_fps=1.0))
    )
    best = result.recommended
    assert best is not None and best.failures[0].constraint == "latency"
    failing = best.history[-1]
    plain = plan_answer(result).plain
    assert "60 ms" in plain
    assert f"would slow answers to {display.ms(failing.e2e_latency_ms)}" in plain


def test_the_sentence_says_less_when_nothing_was_simulated_past_the_cap() -> None:
    result = recommend(quick(LAPTOP, policies=("oldest-first",), max_sessions=2))
    best = result.recommended
    assert best is not None and best.cap == 2 and not best.failures
    plain = plan_answer(result).plain
    assert "third" not in plain and "would" not in plain
    assert plain.endswith("the search stopped there, at the largest count considered.")
    nothing = plan_answer(recommend(quick(LAPTOP, criteria=Criteria(budget_ms=5.0)))).plain
    assert (
        nothing
        == "A card cannot serve even one live camera at 30 fps with 99% of answers within 5 ms."
    )


def test_ordinals_read_as_words_then_numbers() -> None:
    assert [ordinal(n) for n in (1, 6, 12, 13, 21, 22, 23, 111, 112)] == [
        "first", "sixth", "twelfth", "13th", "21st", "22nd", "23rd", "111th", "112th"
    ]  # fmt: skip


def in_order(node: Any) -> Iterator[Any]:
    """Every element under ``node`` in the order the page shows them (a slot filled
    later still shows where it was made)."""
    yield node
    for index in sorted(getattr(node, "children", {})):
        yield from in_order(node.children[index])


def test_the_page_says_the_sentence_under_the_headline_and_the_calibration_below(
    app: AppTest,
) -> None:
    app.query_params.update({"seeds": "2", "duration_s": "5", "price_per_hour": "2"})
    run(app)
    shown = list(in_order(app.main))
    kinds = [(getattr(e, "type", ""), getattr(e, "key", None)) for e in shown]
    title = next(i for i, e in enumerate(shown) if getattr(e, "type", "") == "title")
    plain = next(i for i, (_, key) in enumerate(kinds) if key == "plan_plain")
    control = next(i for i, (_, key) in enumerate(kinds) if key == "plan_calibration")
    metrics = next(i for i, (kind, _) in enumerate(kinds) if kind == "metric")
    assert title < plain < metrics < control
    sentence = app.get("markdown")
    answer = [m.value for m in sentence if "live camera" in m.value]
    assert len(answer) == 1 and "Each card serves" in answer[0]
    cost = app.main.get_by_key("plan_cost")
    text = " ".join(seen(m.value) for m in cost if getattr(m, "type", "") == "markdown")
    seats = int(text.split(" seats")[0].rsplit("÷ ", 1)[1])
    assert f"{display.money(2.0 / seats)} per seat-hour" in text
    assert f"{display.money(2.0 / seats * HOURS_PER_MONTH)} per seat-month" in text
    assert f"a month is {HOURS_PER_MONTH} hours" in text
