"""Which batch to measure next: one definition, one function, the same answer on every page
for the same plan, and, where there is no plan, advice that says what it is relative to."""

from __future__ import annotations

import re
from pathlib import Path

from streamlit.testing.v1 import AppTest

from dashboard.navigation import PAGES
from dashboard.state import store
from planner.curves import measure_next
from planner.curves.curve import Point
from planner.curves.fit import fit_curve
from planner.plan.params import PlanParams
from planner.plan.recommend import recommend
from planner.plan.resolve import plan_inputs

REPO = Path(__file__).resolve().parent.parent
QUICK = {"seeds": "2", "duration_s": "5"}


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
    plan = cli("recommend", "--points", "1:8,3:20", "--seeds", "1", "--duration-s", "5",
               "--policies", "batch-all", "--json")  # fmt: skip
    assert plan.status == 0, plan.err
    assert plan.json["measure_next"] is not None
    assert plan.json["measure_next_basis"].startswith("this plan")
    fit = cli("fit", "--points", "1:8,3:20", "--json")
    assert fit.status == 0, fit.err
    assert fit.json["measure_next_basis"].startswith("no plan")
    # The text output says the same.
    text = cli("recommend", "--points", "1:8,3:20", "--seeds", "1", "--duration-s", "5",
               "--policies", "batch-all")  # fmt: skip
    assert f"measure batch {plan.json['measure_next']} next, relative to this plan" in text.out
    text = cli("fit", "--points", "1:8,3:20")
    assert "relative to no plan" in text.out
