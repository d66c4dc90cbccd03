"""The Simulate page's worker beyond one model (SPEC §6.3), with the Plan page's controls:
the video decoders, the chain of models and co-tenants by workload are set on the page,
change the run and go into its link; a link carrying them reopens unchanged. Models of a
chain that share a name are told apart, on the page and by ``planner simulate``."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from streamlit.testing.v1 import AppTest

from planner import display
from planner.curves.curve import Point, make_curve
from planner.links.urls import decode, encode
from planner.plan.params import SimulateParams
from planner.plan.resolve import simulation_inputs
from planner.sim.simulate import simulate
from planner.store.repository import Store

from .test_dashboard_pages import db, ignored, open_page, plain, query, rows
from .test_plan_worker import _ids


def _run(params: SimulateParams) -> Any:
    return simulate(simulation_inputs(params, db()).scenario)


def test_a_decode_time_set_on_the_page_binds_the_run_and_goes_into_the_link(
    app: AppTest,
) -> None:
    first = next(c.id for c in db().curves() if c.card == "server-24gb")
    plain_run = SimulateParams(curve=first, sessions=6, duration_s=5.0)
    open_page(app, "simulate.py", encode(plain_run))
    assert not {"decode_ms", "decoders", "codec", "cpu_decode_ms"} & set(query(app))
    assert app.number_input(key="sim_decode_ms").value is None  # no decode stage
    alone = _run(plain_run)
    assert rows(app, "sim_summary")[0]["mean (fps)"] == display.fps(alone.mean_fps, unit=False)
    # One decoder at 20 ms a frame decodes 50 frames a second of the 180 the sessions send.
    app.number_input(key="sim_decode_ms").set_value(20.0)
    app.number_input(key="sim_decoders").set_value(1)
    app.run()
    assert not app.exception
    assert query(app)["decode_ms"] == "20" and query(app)["decoders"] == "1"
    params, problems = decode(SimulateParams, query(app))
    assert problems == [] and params == replace(plain_run, decode_ms=20.0, decoders=1)
    bound = _run(params)
    summary = rows(app, "sim_summary")[0]
    assert summary["mean (fps)"] == display.fps(bound.mean_fps, unit=False)
    assert summary["slowest session (fps)"] == display.fps(bound.min_fps, unit=False)
    assert bound.mean_fps < alone.mean_fps  # fewer frames per session: the decoder binds
    assert bound.mean_fps * 6 <= 50.0 * 1.01
    # Emptied, the decode time leaves no decode stage and the link it had.
    app.number_input(key="sim_decode_ms").set_value(None)
    app.number_input(key="sim_decoders").set_value(None)
    app.run()
    assert not app.exception
    assert query(app) == encode(plain_run)


def test_a_link_with_the_whole_worker_reopens_unchanged(app: AppTest) -> None:
    first, other = _ids()
    linked = SimulateParams(
        curve=first,
        sessions=4,
        duration_s=2.0,
        mode="time-slicing",
        cascade=(f"{other}:3",),
        cotenant_curve=(other,),
        cotenant_batch=(4.0,),
        cotenant_rps=(20.0,),
        decode_ms=2.0,
        decoders=2,
        codec="h265",
    )
    open_page(app, "simulate.py", encode(linked))
    assert not app.exception
    assert ignored(app) == []
    assert app.number_input(key="sim_decode_ms").value == 2.0
    assert app.number_input(key="sim_decoders").value == 2
    assert app.selectbox(key="sim_codec").value == "h265"
    assert app.text_input(key="sim_cotenants").value == ""  # no duty cycles were given
    captions = [plain(c.value) for c in app.caption]
    assert any(c.startswith("2. classifier") for c in captions)  # the chain's second model
    assert any("20 frames/s in batches of 4" in c for c in captions)  # the co-tenant's load
    assert query(app) == encode(linked)
    expected = _run(linked)
    assert rows(app, "sim_summary")[0]["mean (fps)"] == display.fps(expected.mean_fps, unit=False)


def test_co_tenants_by_workload_stay_in_the_link_under_another_mode(app: AppTest) -> None:
    first, other = _ids()
    linked = SimulateParams(curve=first, sessions=4, duration_s=2.0, cotenant_curve=(other,),
                            cotenant_batch=(4.0,), cotenant_rps=(20.0,))  # fmt: skip
    open_page(app, "simulate.py", encode(linked))
    assert not app.exception
    assert ignored(app) == []
    assert query(app) == encode(linked)
    assert any("apply under time-slicing" in c.value for c in app.caption)
    app.selectbox(key="sim_mode").set_value("time-slicing")
    app.run()
    assert not app.exception
    assert query(app) == encode(replace(linked, mode="time-slicing"))


def test_the_chain_controls_add_a_model_to_the_run_and_its_link(app: AppTest) -> None:
    first, other = _ids()
    open_page(app, "simulate.py", encode(SimulateParams(curve=first, duration_s=2.0)))
    assert "cascade" not in query(app)
    assert not [e for e in app if getattr(e, "key", None) == "sim_models_0"]  # one model
    app.selectbox(key="sim_cascade_curve").set_value(other)
    app.number_input(key="sim_cascade_crops").set_value(2.0)
    app.button(key="sim_cascade_add").click()
    app.run()
    assert not app.exception
    assert query(app)["cascade"] == f"{other}:2"
    models = [r["Model"] for r in rows(app, "sim_models_0")]
    assert len(models) == 2 and models[1] == "classifier"


def _two_resolutions(store: Store) -> tuple[str, str]:
    """One detector's curves at two resolutions on one card: the chain runs the small
    one on the frame, then the large one on its crops."""
    made = [
        make_curve(
            model="ball-detector",
            card="server-24gb",
            precision="fp16",
            resolution=resolution,
            points=[Point(1, ms), Point(8, 4 * ms)],
        )
        for resolution, ms in (("640x640", 2.0), ("1280x1280", 6.0))
    ]
    small, large = store.add_curves(made)
    return small.id, large.id


def test_models_that_share_a_name_are_told_apart_on_the_command_line(
    cli: Any, db_path: Any
) -> None:
    with Store(db_path) as store:
        small, large = _two_resolutions(store)
    done = cli("simulate", "--curve", small, "--cascade", f"{large}:2", "--sessions", "3",
               "--duration-s", "2")  # fmt: skip
    assert done.status == 0, done.err
    lines = done.out.splitlines()
    at = next(i for i, x in enumerate(lines) if x.startswith("each batch's time by model"))
    shown = ["ball-detector (model 1)", "ball-detector (model 2)"]
    assert [x.strip().startswith(name) for x, name in zip(lines[at + 1 : at + 3], shown,
                                                         strict=True)] == [True, True]  # fmt: skip
    doc = cli("simulate", "--curve", small, "--cascade", f"{large}:2", "--sessions", "3",
              "--duration-s", "2", "--json").json  # fmt: skip
    assert [m["model"] for m in doc["cascade_models"]] == shown


def test_models_that_share_a_name_are_told_apart_on_the_page(app: AppTest) -> None:
    small, large = _two_resolutions(db())
    linked = SimulateParams(curve=small, sessions=3, duration_s=2.0, cascade=(f"{large}:2",))
    open_page(app, "simulate.py", encode(linked))
    assert not app.exception
    models = [r["Model"] for r in rows(app, "sim_models_0")]
    assert models == ["ball-detector (model 1)", "ball-detector (model 2)"]
