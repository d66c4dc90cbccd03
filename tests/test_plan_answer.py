"""A plan's answer (``planner.plan.answer``): composed once from the recommendation, and
said in the same sentences on the Plan page, in the report's Markdown and in
``planner recommend``'s text."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from dashboard.state import store
from planner.curves.curve import Point
from planner.curves.fit import fit_curve
from planner.plan.answer import Answer, plan_answer
from planner.plan.params import PlanParams
from planner.plan.recommend import recommend
from planner.plan.request import Criteria, Request
from planner.plan.resolve import plan_inputs
from planner.report.document import ReportContext
from planner.report.markdown import markdown_report
from tests.conftest import run

REPO = Path(__file__).resolve().parent.parent
LAPTOP = [(1, 9.82), (2, 20.36), (3, 32.71), (4, 46.15), (8, 103.77), (16, 221.25)]


def quick(points: list[tuple[int, float]], **changes: Any) -> Request:
    curve = fit_curve([Point(b, v) for b, v in points])
    return Request(curve=curve, seeds=2, duration_s=5.0, **changes)


def test_a_one_point_curve_is_extrapolated_from_batch_1_never_a_range_1_1() -> None:
    answer = plan_answer(recommend(quick([(1, 8.0)], policies=("batch-all",))))
    assert answer.extrapolated is not None
    assert "beyond the measured batch 1," in answer.extrapolated
    assert not any("1–1" in s for s in answer.sentences)
    assert answer.measure_next is not None and answer.measure_next.startswith("Measure batch ")


def test_a_cap_that_is_one_number_says_why_the_next_seat_fails() -> None:
    result = recommend(quick(LAPTOP, policies=("oldest-first",)))
    best = result.recommended
    assert best is not None and best.cap_low == best.cap == best.cap_high
    answer = plan_answer(result)
    assert answer.headline == f"{best.seats} seats per card — {best.label}"
    assert answer.why.lead == f"Why not {best.cap + 1}?"
    assert (
        answer.why.text == best.binding_constraint[:1].upper() + best.binding_constraint[1:] + "."
    )
    assert answer.why.items == () and answer.instances is None
    assert answer.assumptions == (result.request.curve.description, *result.assumptions)


def test_when_nothing_fits_the_answer_names_the_option_the_summary_names() -> None:
    result = recommend(quick(LAPTOP, criteria=Criteria(budget_ms=5.0)))
    assert result.recommended is None
    answer = plan_answer(result)
    closest = result.closest
    assert closest is not None
    assert answer.headline == "No seat fits these criteria"
    assert answer.why.lead == "Not even one session meets them."
    assert answer.why.text == f"The closest is {closest.label}: {closest.binding_constraint}."
    assert f"the closest is {closest.label}:" in result.summary


# ---------------------------------------------------------------------------------------
# The same sentences on the three fronts.


def seen(text: str) -> str:
    """What a reader sees: Markdown escapes, word joiners and bold marks gone, spaces
    collapsed; in lower case (the command line writes its advice in lower case)."""
    unescaped = re.sub(r"\\(.)", r"\1", text).replace("\u2060", "").replace("**", "")
    return " ".join(unescaped.split()).casefold()


def page_text(at: AppTest) -> str:
    shown = [*at.title, *at.markdown, *at.warning, *at.info, *at.caption]
    return "\n".join(seen(e.value) for e in shown)


def missing(answer: Answer, text: str) -> list[str]:
    return [s for s in answer.sentences if seen(s) not in text]


PLANS = {
    "one point": {"points": "1:8", "policies": "batch-all,oldest-first"},
    "MIG instances": {"points": "1:4.69,4:9.29", "card": "h100-80gb", "modes": "mig",
                      "mig_profile": "1g.10gb", "policies": "oldest-first"},
}  # fmt: skip


@pytest.mark.parametrize("plan", PLANS.values(), ids=list(PLANS))
def test_the_page_the_report_and_the_command_say_the_same_answer(
    app: AppTest, cli: Any, plan: dict[str, str]
) -> None:
    query = {**plan, "seeds": "2", "duration_s": "5"}
    for key, value in query.items():
        app.query_params[key] = value
    run(app)

    params = PlanParams(
        points=tuple(Point(int(b), float(v)) for b, v in
                     (p.split(":") for p in plan["points"].split(","))),
        card=plan.get("card"), modes=tuple(plan["modes"].split(",")) if "modes" in plan else None,
        mig_profile=plan.get("mig_profile"), policies=tuple(plan["policies"].split(",")),
        seeds=2, duration_s=5.0,
    )  # fmt: skip
    inputs = plan_inputs(params, store())
    result = recommend(inputs.request)
    answer = plan_answer(result)
    assert answer.why.items or answer.instances  # a range, or seats from instances
    assert answer.extrapolated is not None

    page = page_text(app)
    report = seen(markdown_report(ReportContext(params, inputs, result)))
    options = [part for key, value in query.items() for part in (f"--{key}", value)]
    said = cli("recommend", *(o.replace("_", "-") if o.startswith("--") else o for o in options))
    assert said.status == 0, said.err
    command = seen(said.out)
    for front, text in (("page", page), ("report", report), ("command", command)):
        assert not missing(answer, text), (front, missing(answer, text))
        assert "1–1" not in text, front
