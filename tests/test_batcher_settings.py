"""Triton's batcher settings (largest batch, queue delay) as plan parameters: on the Plan
page, in links, saved plans, studies, ``planner recommend`` and the report, meaning what
they mean for ``planner simulate``; unset, a plan takes those of the server its curve was
measured on (``planner loadtest --target``), else each policy's own, as before."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from planner.curves.curve import BATCHER_KEY, Point, make_curve
from planner.errors import BadInput
from planner.limits import UNCALIBRATED_MARGIN
from planner.links.urls import decode, encode, saved_params
from planner.plan.params import PlanParams
from planner.plan.recommend import recommend
from planner.plan.resolve import pin_batcher, plan_inputs, plan_simulation
from planner.sim.scenario import Sharing
from planner.store.repository import Store
from planner.studies.study import cells, study_from_dict
from planner.validate.loadtest_store import load_loadtest, loadtests
from planner.validate.server.client import ModelInput, ServerModel
from planner.validate.server.curves import SINGLE, Sweep, make_server_curve
from planner.validate.server.target import parse_target
from tests.conftest import run

POINTS = "1:4,8:8,32:20"
"""A curve whose batch 8 serves 1,000 frames/s and batch 32 1,600: the largest batch sets
how many 30 fps sessions a card holds."""
QUICK = ("--seeds", "1", "--duration-s", "5", "--max-sessions", "64")
TUNED = ("--max-batch", "32", "--max-queue-delay-us", "500")
SERVER = {"max_batch": 32, "max_queue_delay_us": 500.0}


def points() -> tuple[Point, ...]:
    return tuple(Point(int(b), float(ms)) for b, ms in (p.split(":") for p in POINTS.split(",")))


def server_curve(batcher: Any = SERVER) -> Any:
    return make_curve(model="det", card="server at 10.0.0.1:8001", points=points(),
                      source="measured", environment={BATCHER_KEY: batcher})  # fmt: skip


def plan(**values: Any) -> PlanParams:
    return PlanParams(policies=("triton",), seeds=1, duration_s=5.0, max_sessions=64, **values)


def seats(cli: Any, *argv: str) -> dict[str, Any]:
    out = cli("recommend", "--points", POINTS, "--policies", "triton", *QUICK, *argv, "--json")
    assert out.status == 0, out.err
    best = out.json["recommended"]
    assert best is not None
    return dict(best)


def test_recommend_and_the_plan_page_link_take_the_same_settings(cli: Any, app: AppTest) -> None:
    tuned, default = seats(cli, *TUNED), seats(cli)
    # A larger batch serves more frames per second: the cap moves with the setting.
    assert tuned["cap"] > default["cap"]
    assert seats(cli, "--max-batch", "8", "--max-queue-delay-us", "2000") == default
    # The margin the command line pins by default, so the link is the same plan.
    link = encode(plan(points=points(), max_batch=32, max_queue_delay_us=500.0,
                       margin=UNCALIBRATED_MARGIN))  # fmt: skip
    assert link["max_batch"] == "32" and link["max_queue_delay_us"] == "500"
    for key, value in link.items():
        app.query_params[key] = value
    run(app)
    assert not [w.value for w in app.warning if "ignored" in w.value]
    assert app.number_input(key="plan_max_batch").value == 32
    assert app.number_input(key="plan_max_queue_delay_us").value == 500
    headline = app.title[0].value
    assert headline.startswith(f"{tuned['seats']} seats per card — triton")
    assert {k: v for k, v in app.query_params.items()}["max_batch"] in ("32", ["32"])
    # The page's controls change the answer as the options do.
    app.number_input(key="plan_max_batch").set_value(None)
    app.number_input(key="plan_max_queue_delay_us").set_value(None)
    run(app)
    assert app.title[0].value.startswith(f"{default['seats']} seats per card — triton")
    assert "max_batch" not in app.query_params


def test_the_controls_show_only_for_a_policy_that_takes_them(app: AppTest) -> None:
    app.query_params["policies"] = "batch-all"
    app.query_params["seeds"] = "1"
    run(app)
    keys = {w.key for w in app.number_input}
    assert "plan_max_batch" not in keys and "plan_max_queue_delay_us" not in keys
    app.multiselect(key="plan_policies").set_value(["max-batch"])
    run(app)
    keys = {w.key for w in app.number_input}
    assert "plan_max_batch" in keys and "plan_max_queue_delay_us" not in keys


def test_unset_settings_reproduce_every_plan_made_before_they_existed() -> None:
    older = plan(points=points())
    assert "max_batch" not in encode(older) and "max_batch" not in saved_params(older)
    pinned = plan(points=points(), max_batch=8, max_queue_delay_us=2000.0)
    unset, given = plan_inputs(older, None).request, plan_inputs(pinned, None).request
    for sessions in (4, 40):
        old, new = (r.scenario("triton", Sharing(), "central", sessions, 0) for r in (unset, given))
        assert (old.policy_params() == new.policy_params()).all()
        assert old.with_(max_batch=8, max_queue_delay_us=2000.0) == new
    assert recommend(unset).recommended == recommend(given).recommended
    # A saved plan or a link written before them decodes to the same plan.
    assert decode(PlanParams, saved_params(older)) == (older, [])
    # A link that gives them is no longer told they are unknown.
    params, ignored = decode(PlanParams, {"policies": "triton", "max_batch": "32"})
    assert ignored == [] and params.max_batch == 32


def test_recommend_refuses_a_setting_no_policy_of_the_plan_takes(cli: Any) -> None:
    out = cli("recommend", "--points", POINTS, "--policies", "batch-all", "--max-batch", "16")
    assert out.status == 2
    assert "--max-batch applies to max-batch and triton only" in out.err
    out = cli("recommend", "--points", POINTS, "--policies", "max-batch",
              "--max-queue-delay-us", "100")  # fmt: skip
    assert out.status == 2 and "--max-queue-delay-us applies to triton only" in out.err
    out = cli("recommend", "--points", POINTS, "--policies", "triton", "--max-batch", "0")
    assert out.status == 2 and "--max-batch" in out.err and "1 to 4096" in out.err


def test_a_server_curve_gives_its_batcher_to_plans_and_links_pin_it(store: Store) -> None:
    (curve,) = store.add_curves([server_curve()])
    assert store.curve(curve.id).batcher == SERVER
    unset = plan(curve=curve.id)
    request = plan_inputs(unset, store).request
    assert (request.max_batch, request.max_queue_delay_us) == (32, 500.0)
    # What a plan gives wins over the server's.
    given = plan_inputs(plan(curve=curve.id, max_batch=4), store).request
    assert (given.max_batch, given.max_queue_delay_us) == (4, 500.0)
    # A link pins what it used, so that it reopens the same anywhere (embedded points too).
    pinned = pin_batcher(unset, curve)
    assert (pinned.max_batch, pinned.max_queue_delay_us) == (32, 500.0)
    assert plan_inputs(pinned, store).request == request
    only_max_batch = pin_batcher(replace_policies(unset, ("max-batch",)), curve)
    assert (only_max_batch.max_batch, only_max_batch.max_queue_delay_us) == (32, None)
    assert pin_batcher(replace_policies(unset, ("batch-all",)), curve) == replace_policies(
        unset, ("batch-all",)
    )
    # A curve measured anywhere else plans as before.
    (plain,) = store.add_curves([make_curve(model="det", card="l4", points=points())])
    assert plain.batcher == {} and pin_batcher(plan(curve=plain.id), plain) == plan(curve=plain.id)
    # The run the plan shows in detail is the plan's.
    result = recommend(request)
    best = result.recommended
    assert best is not None
    run_params = plan_simulation(unset, request, best, best.cap)
    assert (run_params.max_batch, run_params.max_queue_delay_us) == (32, 500.0)


def replace_policies(params: PlanParams, policies: tuple[str, ...]) -> PlanParams:
    return replace(params, policies=policies)


def test_a_curve_file_with_bad_batcher_settings_is_refused() -> None:
    for bad in ({"max_batch": 0}, {"max_batch": 2.5}, {"max_queue_delay_us": -1}, [8],
                {"max_batch": 8, "delay": 1}, {"max_batch": True}):  # fmt: skip
        with pytest.raises(BadInput, match="batcher"):
            server_curve(bad)


def test_a_study_varies_the_settings_and_pins_the_servers(store: Store) -> None:
    (curve,) = store.add_curves([server_curve()])
    study = study_from_dict(
        {
            "name": "batcher",
            "curves": {"ids": [curve.id]},
            "fixed": {"seeds": 1, "policies": "triton"},
            "axes": {"max_batch": [8, 16]},
        }
    )
    found = cells(store, study)
    assert [(c.params.max_batch, c.params.max_queue_delay_us) for c in found] == [
        (8, 500.0),
        (16, 500.0),
    ]
    assert len({c.key for c in found}) == 2
    plain = study_from_dict({"name": "server", "curves": {"ids": [curve.id]},
                             "fixed": {"seeds": 1, "policies": "triton"}})  # fmt: skip
    (cell,) = cells(store, plain)
    assert (cell.params.max_batch, cell.params.max_queue_delay_us) == (32, 500.0)


def test_the_report_lists_the_settings_the_plan_took(store: Store) -> None:
    from planner.report.document import ReportContext, _inputs

    def rows(params: PlanParams) -> dict[str, str]:
        inputs = plan_inputs(params, store)
        result = recommend(inputs.request)
        table = _inputs(ReportContext(params, inputs, result, None)).blocks[0]
        return dict(table.rows)  # type: ignore[attr-defined]

    batch = "largest batch (max-batch, triton)"
    delay = "longest wait for a fuller batch (triton), us"
    quick = {"seeds": 1, "duration_s": 2.0, "max_sessions": 8}
    shown = rows(PlanParams(points=points(), policies=("max-batch", "triton"), **quick))
    assert shown[batch] == "4 (max-batch's default), 8 (triton's default)"
    assert shown[delay] == "2000 (triton's default)"
    shown = rows(PlanParams(points=points(), policies=("triton",), max_batch=32, **quick))
    assert shown[batch] == "32"
    (curve,) = store.add_curves([server_curve()])
    unpinned = PlanParams(curve=curve.id, policies=("triton",), **quick)
    for params in (unpinned, pin_batcher(unpinned, curve)):
        assert rows(params)[delay] == "500 (the server's the curve was measured on)"
    assert rows(replace(unpinned, max_queue_delay_us=100.0))[delay] == "100"
    assert batch not in rows(PlanParams(points=points(), policies=("batch-all",), **quick))


def test_a_server_load_test_stores_its_batcher_with_the_curve() -> None:
    model = ServerModel(
        target=parse_target("grpc://127.0.0.1:8001"),
        name="det",
        inputs=(ModelInput("x", "FP32", (3, 8, 8)),),
        max_batch_size=32,
        max_queue_delay_us=500.0,
    )
    found = Sweep(SINGLE, timings={1: [4.0, 4.1], 8: [8.0, 8.2]}, queue_ms={1: 0.0, 8: 0.0},
                  ran={1: {}, 8: {}})  # fmt: skip
    curve = make_server_curve(found, SimpleNamespace(model=model), "server")  # type: ignore[arg-type]
    assert curve.batcher == SERVER
    # A model without a dynamic batcher runs every request alone.
    alone = ServerModel(model.target, "det", model.inputs, 32, None)
    assert alone.batcher == {"max_batch": 1, "max_queue_delay_us": 0.0}


def test_the_command_line_pins_the_servers_settings_in_what_it_writes(
    cli: Any, store: Store
) -> None:
    (curve,) = store.add_curves([server_curve()])
    embedded = cli("link", "--curve", curve.id, "--self-contained", "--policies", "triton",
                   "--json")  # fmt: skip
    assert embedded.status == 0, embedded.err
    assert embedded.json["params"]["max_batch"] == "32"
    assert embedded.json["params"]["max_queue_delay_us"] == "500"
    # A link embeds the points but not the curve's environment: the pinned values carry it.
    params, ignored = decode(PlanParams, embedded.json["params"])
    assert ignored == [] and plan_inputs(params, None).request.max_batch == 32
    saved = cli("link", "--curve", curve.id, "--policies", "max-batch", "--save", "--json")
    assert saved.status == 0, saved.err
    stored = store.plan(saved.json["plan_id"])
    assert stored["max_batch"] == "32" and "max_queue_delay_us" not in stored


@pytest.mark.triton
def test_a_real_servers_load_test_gives_its_batcher_to_plans_on_its_curve(
    cli: Any, store: Store, triton_server: tuple[int, int]
) -> None:
    from tests.triton_server import MAX_BATCH, MODEL, QUEUE_DELAY_US

    _, grpc = triton_server
    out = cli("loadtest", "--target", f"grpc://127.0.0.1:{grpc}", "--model", MODEL, "--sessions",
              "1", "--duration-s", "1", "--warmup", "1", "--repetitions", "4")  # fmt: skip
    assert out.status == 0, out.err
    (row,) = loadtests(store)
    curves = load_loadtest(store, row["id"]).environment["curves"]
    server = {"max_batch": MAX_BATCH, "max_queue_delay_us": float(QUEUE_DELAY_US)}
    for curve_id in curves.values():
        assert store.curve(curve_id).batcher == server
    single = store.curve(curves["single"])
    request = plan_inputs(plan(curve=single.id), store).request
    assert (request.max_batch, request.max_queue_delay_us) == (MAX_BATCH, QUEUE_DELAY_US)
    link = cli("link", "--curve", single.id, "--policies", "triton", "--self-contained", "--json")
    assert link.json["params"]["max_batch"] == str(MAX_BATCH)


def test_an_imported_run_on_a_server_curve_is_predicted_with_its_batcher_and_cost() -> None:
    from dataclasses import replace

    from planner.validate.imported import imported_scenario
    from planner.validate.loadtest_import import import_scenario

    curve = replace(server_curve(), environment={BATCHER_KEY: SERVER, "per_request_ms": 0.5})
    # The Validate page's form and `planner loadtest import` build the same scenario.
    page = import_scenario(curve, 4, "triton", 30.0, 5.0)
    command = imported_scenario(curve, 4, "triton", {"fps": 30.0, "duration_s": 5.0})
    assert page == command
    assert page.max_batch == SERVER["max_batch"]
    assert page.max_queue_delay_us == SERVER["max_queue_delay_us"]
    plain = imported_scenario(server_curve({}), 4, "triton", {"fps": 30.0, "duration_s": 5.0})
    # The per-request cost is in the table, as in a plan's runs: b x 0.5 ms more.
    assert page.latency_ms[3] == pytest.approx(plain.latency_ms[3] + 4 * 0.5)
