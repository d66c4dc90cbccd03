"""A co-tenant by workload whose curve is given as points (SPEC §6.3): ``1:5,4:12``
instead of a stored curve, on the command line (``--cotenant-points``), in links, on the
Plan page; it plans exactly as the same points stored as a curve, and on each band edge
as the duty cycle and busy period it implies there, and old links of ids read as before."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, urlsplit

from streamlit.testing.v1 import AppTest

from planner.curves.curve import Point, make_curve
from planner.curves.fit import fit_curve
from planner.links.parameters import PARAMETERS
from planner.links.urls import decode, encode
from planner.plan.cotenants import workloads_of
from planner.plan.params import PlanParams
from planner.store.repository import Store

from .test_dashboard_pages import QUICK, db, expected, headline_of, open_page, plain, query

POINTS = "1:5,4:12"
COMMON = ("--points", "1:6,2:8.5,4:13,8:22", "--card", "server-24gb", "--budget-ms", "80",
          "--seeds", "1", "--duration-s", "2", "--policies", "batch-all",
          "--modes", "time-slicing", "--json")  # fmt: skip


def _cap(doc: dict[str, Any]) -> tuple[int, int, int]:
    best = doc["recommended"]
    return best["cap"], best["cap_low"], best["cap_high"]


def test_points_plan_as_the_stored_curve_and_the_duty_cycle_they_imply(
    cli: Any, db_path: Any
) -> None:
    with Store(db_path) as store:
        (stored,) = store.add_curves([make_curve(
            model="tts", card="server-24gb", precision="fp16", resolution="1x1",
            points=[Point(1, 5.0), Point(4, 12.0)],
        )])  # fmt: skip
    workload = ("--cotenant-batch", "4", "--cotenant-rps", "20")
    by_points = cli("recommend", *COMMON, "--cotenant-points", POINTS, *workload)
    assert by_points.status == 0, by_points.err
    by_curve = cli("recommend", *COMMON, "--cotenant-curve", stored.id, *workload)
    assert _cap(by_points.json) == _cap(by_curve.json)
    # Each edge of the plan runs the co-tenant at its curve's time on that edge: the plan
    # of the duty cycle and busy period that edge implies, the fit's for the cap.
    central, fast, slow = fit_curve((Point(1, 5.0), Point(4, 12.0))).band(4)
    implied = [
        _cap(cli("recommend", *COMMON, "--cotenants", f"{20 / 4 * float(busy) / 1000:.17g}",
                 "--busy-period-ms", f"{float(busy):.17g}").json)
        for busy in (central, slow, fast)
    ]  # fmt: skip
    assert _cap(by_points.json) == (implied[0][0], implied[1][1], implied[2][2])
    assert _cap(by_points.json)[0] > 0
    # The answer shows the derivation, naming the points.
    said = " ".join(by_points.json["assumptions"])
    assert f"a co-tenant on points {POINTS}" in said and "busy 20 / 4 x" in said


def test_points_go_into_the_link_in_order_and_back_into_the_command_line(
    cli: Any, db_path: Any
) -> None:
    from planner.cli import build_parser
    from planner.cli.planning import plan_params
    from planner.plan.resolve import command_line

    with Store(db_path) as store:
        first = store.curves()[0].id
    run = cli(
        "link", "--curve", first, "--modes", "time-slicing",
        "--cotenant-points", "4:12,1:5.0", "--cotenant-batch", "4", "--cotenant-rps", "20",
        "--cotenant-curve", first, "--cotenant-batch", "8", "--cotenant-rps", "10",
    )  # fmt: skip
    assert run.status == 0, run.err
    query_ = parse_qs(urlsplit(run.out.strip()).query)
    params, ignored = decode(PlanParams, query_)
    assert ignored == []
    assert params.cotenant_curve == (POINTS, first)  # in the order given, points sorted
    assert params.cotenant_batch == (4.0, 8.0)
    argv = command_line("recommend", params)
    assert plan_params(build_parser().parse_args(argv[1:])) == params
    # An old link of ids alone reads and writes as it did.
    codec = PARAMETERS["cotenant_curve"].codec
    old = f"{first},{first}"
    assert codec.format(codec.check(old)) == old
    link = {"curve": [first], "cotenant_curve": [old], "cotenant_batch": ["4,8"],
            "cotenant_rps": ["20,10"]}  # fmt: skip
    opened, ignored = decode(PlanParams, link)
    assert ignored == [] and opened.cotenant_curve == (first, first)
    assert encode(opened)["cotenant_curve"] == old


def test_bad_points_are_one_line_naming_the_flag(cli: Any) -> None:
    run = cli("recommend", *COMMON, "--cotenant-points", "1:x", "--cotenant-batch", "4",
              "--cotenant-rps", "20")  # fmt: skip
    assert run.status == 2 and "--cotenant-points" in run.err and "not a number" in run.err
    run = cli("recommend", *COMMON, "--cotenant-points", "4", "--cotenant-batch", "4",
              "--cotenant-rps", "20")  # fmt: skip
    assert run.status == 2 and "--cotenant-points" in run.err


def test_the_plan_page_adds_a_co_tenant_by_its_points(app: AppTest) -> None:
    first = next(c.id for c in db().curves() if c.card == "server-24gb")
    params = PlanParams(curve=first, budget_ms=100.0, policies=("batch-all",),
                        modes=("time-slicing",), cotenants=(0.2,), **QUICK)  # fmt: skip
    open_page(app, "plan.py", encode(params))
    app.text_input(key="plan_cotenant_pick_points").set_value("4:12, 1:5")
    app.number_input(key="plan_cotenant_pick_batch").set_value(4)
    app.number_input(key="plan_cotenant_pick_rps").set_value(20.0)
    app.button(key="plan_cotenant_add").click()
    app.run()
    assert not app.exception
    got, problems = decode(PlanParams, query(app))
    assert problems == []
    assert (got.cotenant_curve, got.cotenant_batch, got.cotenant_rps) == (
        (POINTS,),
        (4.0,),
        (20.0,),
    )
    (workload,) = workloads_of(got, db())
    shown = [plain(c.value) for c in app.caption if "in busy periods of" in plain(c.value)]
    assert shown == [f"C{workload.derivation[1:]}."]
    assert app.title[0].value == headline_of(expected(got))
    assert app.text_input(key="plan_cotenant_pick_points").value == ""
    # Points that do not read are refused with why, and nothing is added.
    app.text_input(key="plan_cotenant_pick_points").set_value("1:x")
    app.button(key="plan_cotenant_add").click()
    app.run()
    assert any("Cannot add this co-tenant" in plain(e.value) for e in app.error)
    assert decode(PlanParams, query(app))[0].cotenant_curve == (POINTS,)
