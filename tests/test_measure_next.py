"""Which batch to measure next: one definition, one function, the same answer on every page
for the same plan, and, where there is no plan, advice that says what it is relative to."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from streamlit.testing.v1 import AppTest

from dashboard.navigation import PAGES
from dashboard.state import store
from planner.cli.fit import fit_document
from planner.curves import measure_next
from planner.curves.curve import Curve, Point, parse_points_option
from planner.curves.fit import FittedCurve, fit_curve
from planner.limits import UNCALIBRATED_MARGIN
from planner.plan.params import PlanParams
from planner.plan.recommend import largest_batch, recommend
from planner.plan.resolve import plan_inputs

REPO = Path(__file__).resolve().parent.parent
QUICK = {"seeds": "2", "duration_s": "5"}
QUICK_PARAMS: dict[str, Any] = {"seeds": 2, "duration_s": 5.0}


def open_page(at: AppTest, script: str, query: dict[str, str]) -> AppTest:
    for key, value in query.items():
        at.query_params[key] = value
    if script != PAGES[0].script:
        at.switch_page(f"dashboard/pages/{script}")
    at.run()
    assert not at.exception, at.exception
    return at


def advised(at: AppTest) -> list[str]:
    return [i.value for i in at.info if "Measure batch" in i.value]


def test_plan_and_compare_give_the_same_batch_for_the_same_plan(app: AppTest) -> None:
    server = next(c for c in store().curves(card="server-24gb") if c.precision == "fp16")
    result = recommend(
        plan_inputs(PlanParams(curve=server.id, seeds=2, duration_s=5.0), store()).request
    )
    assert result.measure_next is not None  # a two-point curve: the cap rests on extrapolation

    (plan_advice,) = advised(open_page(app, "plan.py", {"curve": server.id, **QUICK}))
    assert f"Measure batch {result.measure_next} next" in plan_advice
    assert "relative to this plan" in plan_advice

    other = AppTest.from_file(str(REPO / "app.py"), default_timeout=60)
    compare = open_page(other, "compare.py", {"cards": "server-24gb", "precision": "fp16",
                                              "resolution": "512x288", **QUICK})  # fmt: skip
    (row,) = compare.get_by_key("cmp_table").table[0].value.to_dict("records")
    assert row["measure next"] == f"batch {result.measure_next}"


def test_the_curves_page_says_its_advice_is_relative_to_no_plan(app: AppTest) -> None:
    server = next(c for c in store().curves(card="server-24gb") if c.precision == "fp16")
    (advice,) = advised(open_page(app, "curves.py", {"curve": server.id}))
    batch = int(re.search(r"Measure batch (\d+) next", advice)[1])  # type: ignore[index]
    expected = measure_next.for_curve(fit_curve(server.points))
    assert batch == expected.batch
    assert "relative to no plan" in advice and "1–64" in advice


def test_a_plan_weights_the_batches_that_decided_its_cap() -> None:
    fitted = fit_curve([Point(1, 8.0), Point(3, 20.0)])
    frames = [0] * 65
    frames[5], frames[6] = 300, 100  # the deciding runs ran batches of 5 and 6 only
    advice = measure_next.for_plan(fitted, 64, frames, settled=False)
    weights = [0.0] * 64
    weights[4], weights[5] = 300.0, 100.0
    assert advice.batch == fitted.measure_next(64, weights)
    assert "batches 5–6" in advice.basis
    assert measure_next.for_plan(fitted, 64, frames, settled=True).batch is None
    # Without a plan the same curve is advised over every batch alike, and says so.
    alone = measure_next.for_curve(fitted)
    assert alone.batch == fitted.measure_next(64) and "no plan" in alone.basis


def test_recommend_and_fit_json_name_the_basis_of_their_advice(cli) -> None:
    # Without the uncalibrated margin, whose low end only a load test narrows.
    plan = cli("recommend", "--points", "1:8,3:20", "--seeds", "1", "--duration-s", "5",
               "--policies", "batch-all", "--margin", "none", "--json")  # fmt: skip
    assert plan.status == 0, plan.err
    assert plan.json["measure_next"] is not None
    assert plan.json["measure_next_basis"].startswith("this plan")
    fit = cli("fit", "--points", "1:8,3:20", "--json")
    assert fit.status == 0, fit.err
    assert fit.json["measure_next_basis"].startswith("no plan")
    # The text output says the same.
    text = cli("recommend", "--points", "1:8,3:20", "--seeds", "1", "--duration-s", "5",
               "--policies", "batch-all", "--margin", "none")  # fmt: skip
    assert f"measure batch {plan.json['measure_next']} next, relative to this plan" in text.out
    text = cli("fit", "--points", "1:8,3:20")
    assert "relative to no plan" in text.out


# The advice is a batch size the plan can run, and no display range changes it.

CURVES = st.lists(
    st.tuples(st.integers(1, 48), st.floats(1.0, 40.0)), min_size=1, max_size=4,
    unique_by=lambda p: p[0],
).map(lambda pts: fit_curve([Point(b, ms + b) for b, ms in sorted(pts)]))  # fmt: skip


@settings(max_examples=60, deadline=None)
@given(
    fitted=CURVES,
    largest=st.integers(1, 80),
    frames=st.lists(st.integers(0, 500), min_size=1, max_size=130),
)
def test_a_plans_advice_is_a_batch_it_can_run(
    fitted: FittedCurve, largest: int, frames: list[int]
) -> None:
    advice = measure_next.for_plan(fitted, largest, [0, *frames], settled=False)
    assert advice.batch is None or 1 <= advice.batch <= largest
    assert advice.basis.startswith("this plan")
    if advice.batch is None:
        measured = {p.batch for p in fitted.points}
        assert set(range(1, largest + 1)) <= measured or largest > 64


@settings(max_examples=40, deadline=None)
@given(fitted=CURVES, upto=st.integers(1, 512))
def test_planner_fits_advice_does_not_depend_on_upto(fitted: FittedCurve, upto: int) -> None:
    document = fit_document(fitted, upto)
    assert document["measure_next"] == measure_next.for_curve(fitted).batch
    assert "up to 64" in document["measure_next_basis"]


def test_a_one_frame_mps_plan_advises_no_batch_above_one() -> None:
    # MPS clients of at most 11 sessions served one frame at a time: every batch holds one
    # frame (the advice used to name batch 64, where the fitted throughput peaks).
    params = PlanParams(points=(Point(1, 4.69), Point(4, 9.29)), card="h100-80gb",
                        modes=("mps",), policies=("oldest-first", "round-robin"),
                        max_sessions=11, **QUICK_PARAMS)  # fmt: skip
    result = recommend(plan_inputs(params, store()).request)
    assert largest_batch(result.request, result.options) == 1
    assert result.measure_next is None or result.measure_next == 1
    assert "runs batch 1 only" in result.measure_next_basis


def test_a_batching_plan_advises_within_the_sessions_it_considered() -> None:
    params = PlanParams(points=(Point(1, 6.1), Point(8, 37.2)), max_sessions=5,
                        policies=("batch-all", "oldest-first"), **QUICK_PARAMS)  # fmt: skip
    result = recommend(plan_inputs(params, store()).request)
    assert largest_batch(result.request, result.options) <= 5
    assert result.measure_next is None or result.measure_next <= 5


def advice_line(text: str) -> str:
    (line,) = [ln for ln in text.splitlines() if "next, relative to" in ln]
    return line


def test_the_plan_and_curves_pages_say_what_the_commands_say(app: AppTest, cli: Any) -> None:
    points = "1:6.1,2:10.4,4:19.0,8:37.2"
    plan = cli("recommend", "--points", points, "--max-sessions", "5", "--seeds", "2",
               "--duration-s", "5")  # fmt: skip
    assert plan.status == 0, plan.err
    said = advice_line(plan.out)
    # The margin the command pins by default, so the link is the same plan.
    margin = {"margin": str(UNCALIBRATED_MARGIN)}
    page = open_page(app, "plan.py", {"points": points, "max_sessions": "5", **QUICK, **margin})
    (shown,) = [i.value for i in page.info if "next, relative to" in i.value]
    assert shown.startswith(said[:1].upper() + said[1:])

    fitted = parse_points_option(points)
    (curve,) = store().add_curves(
        [Curve(model="m", card="l4", precision="fp16", resolution="512x288", points=fitted)]
    )
    fits = [cli("fit", "--curve", curve.id, "--upto", upto).out for upto in ("16", "64", "512")]
    found = [re.search(r"measure next: batch (\d+)", out) for out in fits]
    batches = {m[1] for m in found if m is not None}
    assert len(batches) == 1 and all(found)
    other = AppTest.from_file(str(REPO / "app.py"), default_timeout=60)
    (advice,) = advised(open_page(other, "curves.py", {"curve": curve.id}))
    assert f"Measure batch {batches.pop()} next" in advice.replace("*", "")


def test_a_queueing_plan_advises_within_its_policys_largest_batch() -> None:
    # A server that queues every frame holds many frames per session, but Triton's batcher
    # never runs more than max_batch (8) of them at once: no batch above 8 can be measured
    # for this plan's sake.
    params = PlanParams(points=(Point(1, 2.0), Point(2, 2.5)), policies=("triton",),
                        queue="all", **QUICK_PARAMS)  # fmt: skip
    result = recommend(plan_inputs(params, store()).request)
    assert result.options[0].cap > 8  # the queue holds more frames than one batch takes
    assert largest_batch(result.request, result.options) == 8
    assert result.measure_next is None or result.measure_next <= 8
    assert "the batch sizes it can run are 1–8" in result.measure_next_basis
