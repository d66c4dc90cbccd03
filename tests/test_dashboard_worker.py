"""The worker beyond the GPU on the dashboard (SPEC §5.1): the Plan page's 'The worker'
group and memory inputs, the latency by stage at the cap, the Simulate page's CPU lane,
and links that carry all of it (old links open unchanged)."""

from __future__ import annotations

from typing import Any

from streamlit.testing.v1 import AppTest

from planner import display
from planner.curves.curve import Point, make_curve
from planner.links.urls import decode, encode
from planner.plan.params import PlanParams, SimulateParams
from planner.plan.resolve import simulation_inputs
from planner.sim.simulate import simulate

from .test_dashboard_pages import (
    QUICK,
    charts,
    db,
    expected,
    headline_of,
    ignored,
    open_page,
    query,
    texts,
)

WORKER = {"network_ms": 5.0, "pre_ms": 12.0, "post_ms": 2.0, "cpu_workers": 1}


def _server_id() -> str:
    return next(c.id for c in db().curves() if c.card == "server-24gb")


def test_plan_link_with_the_worker_fills_its_group_and_shows_latency_by_stage(
    app: AppTest,
) -> None:
    params = PlanParams(curve=_server_id(), budget_ms=100.0, **QUICK, **WORKER)
    open_page(app, "plan.py", encode(params))
    assert ignored(app) == []
    for name, value in WORKER.items():
        assert app.number_input(key=f"plan_{name}").value == value
    result = expected(params)
    assert app.title[0].value == headline_of(result)
    assert result.recommended is not None and result.recommended.cap == 2
    assert any("CPU thread is busy" in m.value for m in app.markdown)
    stages = charts(app)["plan_chart_stages"]
    names = {t["name"] for t in stages["data"]}
    assert {"network (both ways)", "pre (wait + work)", "GPU", "post (wait + work)"} <= names
    assert stages["layout"]["barmode"] == "stack"
    assert any("1 CPU thread" in t and "busy" in t for t in texts(app.caption))
    assert query(app) == encode(params)


def test_plan_worker_controls_change_the_plan_and_the_link(app: AppTest) -> None:
    open_page(
        app, "plan.py", {"curve": _server_id(), "budget_ms": "100", "seeds": "2", "duration_s": "5"}
    )
    assert not any(k in query(app) for k in WORKER)  # defaults stay out of the link
    app.number_input(key="plan_pre_ms").set_value(12.0)
    app.number_input(key="plan_cpu_workers").set_value(1)
    app.run()
    assert not app.exception
    assert query(app)["pre_ms"] == "12" and query(app)["cpu_workers"] == "1"
    params, problems = decode(PlanParams, query(app))
    assert problems == [] and params.pre_ms == 12.0 and params.cpu_workers == 1
    assert app.title[0].value == headline_of(expected(params))


def test_an_old_plan_link_opens_unchanged_with_the_worker_at_its_defaults(app: AppTest) -> None:
    old = {"budget_ms": "40", "policies": "oldest-first,batch-all", "seeds": "2"}
    open_page(app, "plan.py", old)
    assert ignored(app) == []
    params, _ = decode(PlanParams, old)
    assert (params.network_ms, params.pre_ms, params.post_ms, params.cpu_workers) == (0, 0, 0, 0)
    assert app.title[0].value == headline_of(expected(params))
    assert query(app) == old


def test_plan_memory_of_the_co_tenants_is_a_link_parameter(app: AppTest) -> None:
    points = [Point(1, 4.69, memory_mb=2000.0), Point(4, 9.29, memory_mb=3500.0)]
    curve = make_curve(
        model="m", card="laptop-8gb", precision="fp16", resolution="256x144", points=points
    )
    (stored,) = db().add_curves([curve])
    params = PlanParams(
        curve=stored.id,
        policies=("batch-all",),
        modes=("time-slicing",),
        cotenants=(0.0,),
        cotenant_memory_mb=(4096.0,),
        **QUICK,
    )
    open_page(app, "plan.py", encode(params))
    assert ignored(app) == []
    assert app.text_input(key="plan_cotenant_memory_mb").value == "4096"
    assert any(
        "batch 5 needs 3.9 GB of the 3.6 GB that fit beside the co-tenants" in m.value
        for m in app.markdown
    )
    assert query(app) == encode(params)
    _, problems = decode(PlanParams, {**encode(params), "cotenant_memory_mb": "4096,lots"})
    assert problems == [
        "ignored cotenant_memory_mb='4096,lots': item 2 not a number; using the default (none)"
    ]


def test_simulate_shows_the_cpu_queue_on_its_timeline(app: AppTest) -> None:
    params = SimulateParams(curve=_server_id(), sessions=3, duration_s=5.0, **WORKER)
    open_page(app, "simulate.py", encode(params))
    assert ignored(app) == []
    assert app.number_input(key="sim_pre_ms").value == 12.0
    timeline = charts(app)["sim_chart_timeline_0"]
    names = {t.get("name") for t in timeline["data"]}
    assert {
        "CPU thread: pre job",
        "CPU thread: post job",
        "CPU before the GPU (queue + work)",
        "CPU after the GPU (queue + work)",
        "waiting",
        "on the GPU",
    } <= names
    assert timeline["layout"]["yaxis"]["ticktext"][:2] == ["CPU", "GPU"]
    results = simulate(simulation_inputs(params, db()).scenario)
    assert results.cpu is not None
    metrics: dict[str, Any] = {m.label: m.value for m in app.metric}
    assert metrics["CPU (1 thread) busy"] == display.fraction(results.cpu.busy_fraction)
    assert query(app) == encode(params)
