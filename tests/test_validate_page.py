"""The Validate page and the Plan page's calibration, run in-process with AppTest against a
fresh store per test. Stored load tests are made with ``SleepBackend`` (short real-time
runs); one test runs a small real load test from the page."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from dashboard import validate_charts
from dashboard.navigation import PAGES
from dashboard.state import store
from dashboard.validate_charts import error_rows, figure
from planner import display
from planner.curves.fit import fit_curve
from planner.links.urls import decode
from planner.plan.params import SimulateParams
from planner.plan.resolve import default_curve, simulation_inputs
from planner.sim.calibration import Calibration
from planner.sim.simulate import simulate
from planner.store.calibrations import save_calibration
from planner.store.repository import Store
from planner.validate.loadtest import run_loadtest
from planner.validate.loadtest_store import loadtests, save_loadtest
from planner.validate.options import LoadTestOptions
from planner.validate.runs import LoadTest
from planner.validate.worker.backends import SleepBackend
from tests.conftest import run

REPO = Path(__file__).resolve().parent.parent
QUICK = {"seeds": "2", "duration_s": "5", "max_sessions": "6", "policies": "batch-all"}


def open_validate(at: AppTest) -> AppTest:
    at.switch_page("dashboard/pages/validate.py")
    return run(at)


def texts(elements: Any) -> list[str]:
    return [e.value for e in elements]


def stored_test(db: Store) -> LoadTest:
    curve = default_curve(db)
    table = fit_curve(curve.points).table(64)
    options = LoadTestOptions(sessions=(1, 2), policies=("batch-all", "oldest-first"),
                              duration_s=0.4)  # fmt: skip
    test = run_loadtest(options, curve=curve, backend=SleepBackend(table), stage_ms=(0.0, 0.0))
    return save_loadtest(db, test)


def test_validate_is_a_page_of_its_own() -> None:
    assert "validate.py" in [p.script for p in PAGES]


def test_without_load_tests_or_pytorch_the_page_says_how_to_get_one(
    app: AppTest, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(validate_charts, "torch_available", lambda: False)
    open_validate(app)
    assert any("No load test is stored yet" in t for t in texts(app.info))
    assert any("PyTorch is not installed here" in t for t in texts(app.info))
    assert any("planner loadtest --sessions" in c.value for c in app.code)


def test_a_stored_load_test_shows_its_charts_errors_and_calibration(app: AppTest) -> None:
    test = stored_test(store())
    open_validate(app)
    assert app.selectbox(key="validate_loadtest").value == test.id
    specs = {c.key: json.loads(c.proto.spec) for c in app.get("plotly_chart")}
    fps = specs["validate_fps"]
    names = {t["name"] for t in fps["data"]}
    assert {"batch-all, measured", "batch-all, predicted", "oldest-first, measured"} <= names
    assert fps == json.loads(figure(test, "min_fps").to_json())
    table = app.get_by_key("validate_errors").dataframe[0].value
    assert len(table) == len(test.runs)
    assert list(table["sessions"]) == [r["sessions"] for r in error_rows(test)]
    assert test.calibration is not None
    assert any(test.calibration.id in m for m in texts(app.markdown))
    calibrations = app.get_by_key("validate_calibrations").dataframe[0].value
    assert list(calibrations["calibration"]) == [test.calibration.id]


def test_the_plan_page_says_whether_its_curve_is_calibrated_and_links_pin_it(
    app: AppTest,
) -> None:
    test = stored_test(store())
    assert test.calibration is not None
    for key, value in QUICK.items():
        app.query_params[key] = value
    run(app)
    # Opened without a calibration: the model's figures, and the curve's calibration named.
    assert any(f"has calibration {test.calibration.id}" in c for c in texts(app.caption))
    assert "calibration" not in app.query_params
    # A link that pins it: the plan is calibrated and says by which load test.
    pinned = AppTest.from_file(str(REPO / "app.py"), default_timeout=90)
    for key, value in {**QUICK, "calibration": test.calibration.id}.items():
        pinned.query_params[key] = value
    run(pinned)
    assert pinned.selectbox(key="plan_calibration").value == test.calibration.id
    assert any(f"Calibrated by load test {test.id}" in c for c in texts(pinned.caption))
    assert pinned.query_params["calibration"] in (test.calibration.id, [test.calibration.id])
    # Choosing none on the page drops it from the link.
    pinned.selectbox(key="plan_calibration").set_value("none")
    run(pinned)
    assert "calibration" not in pinned.query_params


def test_a_link_to_an_unknown_calibration_opens_uncalibrated_with_a_message(
    app: AppTest,
) -> None:
    for key, value in {**QUICK, "calibration": "zzzzzzzzzzzz"}.items():
        app.query_params[key] = value
    run(app)
    warnings = [w for w in texts(app.warning) if "Parts of this link were ignored" in w]
    assert warnings and "no stored calibration has that id" in warnings[0]
    assert app.selectbox(key="plan_calibration").value == "none"
    assert app.query_params.get("seeds") in ("2", ["2"])  # the rest of the link was kept


def test_a_calibrated_plans_simulate_link_opens_the_calibrated_run(app: AppTest) -> None:
    db = store()
    # Slow enough that the calibrated run and the model's differ at any session count.
    pinned = save_calibration(db, Calibration(default_curve(db).id, a_ms=6.0, c_ms=1.0, d_ms=4.0))
    for key, value in {**QUICK, "calibration": pinned.id}.items():
        app.query_params[key] = value
    run(app)
    (link,) = [x for x in app.get("page_link") if x.proto.page == "simulate"]
    query = dict(part.split("=", 1) for part in link.proto.query_string.split("&"))
    assert query["calibration"] == pinned.id
    (said,) = [c for c in texts(app.caption) if c.startswith("The link opens seed")]
    claimed = re.search(r"gets (\d+\.\d fps): the plan judges", said)
    assert claimed, said

    detail = AppTest.from_file(str(REPO / "app.py"), default_timeout=90)
    for key, value in query.items():
        detail.query_params[key] = value
    detail.switch_page("dashboard/pages/simulate.py")
    run(detail)
    assert detail.selectbox(key="sim_calibration").value == pinned.id
    assert any(f"calibration {pinned.id}" in c for c in texts(detail.caption))
    assert detail.query_params["calibration"] in (pinned.id, [pinned.id])
    # The run shown is the calibrated one, and so gives the figure the plan quoted.
    params, ignored = decode(SimulateParams, query)
    assert not ignored and params.calibration == pinned.id
    calibrated = simulate(simulation_inputs(params, db).scenario)
    model = simulate(simulation_inputs(replace(params, calibration=None), db).scenario)
    slowest = next(m for m in detail.metric if m.label == "Slowest session")
    assert slowest.value == claimed[1] == display.fps(calibrated.min_fps)
    assert display.fps(model.min_fps) != claimed[1]


def test_a_simulate_link_without_a_calibration_is_the_models_run(app: AppTest) -> None:
    db = store()
    save_calibration(db, Calibration(default_curve(db).id, a_ms=6.0, c_ms=1.0, d_ms=4.0))
    app.query_params["sessions"] = "2"
    app.switch_page("dashboard/pages/simulate.py")
    run(app)
    assert app.selectbox(key="sim_calibration").value == "none"
    assert any(c.startswith("Not calibrated: these are the model's") for c in texts(app.caption))
    assert "calibration" not in app.query_params


@pytest.mark.torch
def test_a_small_load_test_runs_from_the_page_and_is_stored(app: AppTest) -> None:
    open_validate(app)
    app.multiselect(key="validate_sessions").set_value([1])
    app.multiselect(key="validate_policies").set_value(["batch-all"])
    app.slider(key="validate_duration").set_value(1.0)
    app.selectbox(key="validate_resolution").set_value("16x9")
    run(app)
    app.button(key="validate_run").click()
    run(app)
    stored = loadtests(store())
    assert len(stored) == 1 and stored[0]["runs"] == 1
    assert any("Ran and stored load test 1" in s for s in texts(app.success))
    assert app.selectbox(key="validate_loadtest").value == 1
