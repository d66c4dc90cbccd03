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
    claimed = re.search(r"gets (\d+(?:\.\d)? fps): the plan judges", said)
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


def _bundle_files(tmp_path: Path) -> list[tuple[str, bytes, str]]:
    """A reference worker's bundle, as a browser uploads its two files."""
    from planner.validate.worker.bundle import FRAMES, MANIFEST, write_bundle

    curve = default_curve(store())
    options = LoadTestOptions(sessions=(1, 2), policies=("batch-all",), duration_s=0.3)
    backend = SleepBackend(fit_curve(curve.points).table(64))
    test = run_loadtest(options, curve=curve, backend=backend, stage_ms=(0.0, 0.0))
    write_bundle(tmp_path, curve=curve.as_dict(), options=options.as_dict(),
                 runs=[r.records for r in test.runs if r.records is not None], pre_ms=0.0,
                 post_ms=0.0, environment=test.environment)  # fmt: skip
    return [
        (MANIFEST, (tmp_path / MANIFEST).read_bytes(), "application/json"),
        (FRAMES, (tmp_path / FRAMES).read_bytes(), "text/csv"),
    ]


def _records_csv(sessions: int, fps: float, seconds: float, latency_ms: float) -> bytes:
    """Per-frame records of a worker that answered every frame ``latency_ms`` after it."""
    lines = ["session,capture_ms,done_ms,status"]
    for session in range(sessions):
        for k in range(int(fps * seconds)):
            capture = session * 3.0 + k * 1000.0 / fps
            lines.append(f"cam-{session},{capture:.3f},{capture + latency_ms:.3f},delivered")
    return ("\n".join(lines) + "\n").encode()


def _import(app: AppTest, files: list[tuple[str, bytes, str]]) -> AppTest:
    open_validate(app)
    app.file_uploader(key="validate_upload").set_value(files)
    return run(app)


def test_a_bundle_uploaded_on_the_page_is_imported_and_shown(app: AppTest, tmp_path: Path) -> None:
    files = _bundle_files(tmp_path)
    _import(app, files)
    assert not app.number_input  # a bundle carries its scenario: no form to fill in
    app.button(key="validate_import").click()
    run(app)
    stored = loadtests(store())
    assert len(stored) == 1 and stored[0]["source"] == "imported bundle"
    assert stored[0]["runs"] == 2
    assert any("Imported and stored load test 1" in s for s in texts(app.success))
    assert app.selectbox(key="validate_loadtest").value == 1


def test_per_frame_records_uploaded_with_their_scenario_are_compared(app: AppTest) -> None:
    data = _records_csv(sessions=3, fps=30.0, seconds=2.0, latency_ms=25.0)
    _import(app, [("worker-frames.csv", data, "text/csv")])
    app.number_input(key="validate_upload_sessions").set_value(3)
    app.number_input(key="validate_upload_fps").set_value(30.0)
    app.number_input(key="validate_upload_duration").set_value(2.0)
    app.number_input(key="validate_upload_seeds").set_value(2)
    run(app)
    app.button(key="validate_import").click()
    run(app)
    stored = loadtests(store())
    assert len(stored) == 1 and stored[0]["source"] == "imported per-frame records"
    from planner.validate.loadtest_store import load_loadtest

    test = load_loadtest(store(), 1)
    assert test.runs[0].sessions == 3
    assert test.runs[0].measured.e2e_p50_ms == pytest.approx(25.0)
    assert "worker-frames.csv" in test.description


@pytest.mark.parametrize(
    ("which", "message"),
    [
        ("manifest alone", "a bundle is the two files loadtest.json and frames.csv together"),
        ("broken frames", "frames.csv"),
        ("sessions differ", "sessions"),
        ("not a load test", "not a load test file"),
    ],
)
def test_a_bad_upload_says_why_and_stores_nothing(
    app: AppTest, tmp_path: Path, which: str, message: str
) -> None:
    bundle = _bundle_files(tmp_path)
    files = {
        "manifest alone": bundle[:1],
        "broken frames": [bundle[0], (bundle[1][0], b"run,session\n1,x\n", "text/csv")],
        "sessions differ": [("f.csv", _records_csv(5, 30.0, 1.0, 20.0), "text/csv")],
        "not a load test": [("sales.csv", b"region,revenue\nnorth,3\n", "text/csv")],
    }[which]
    _import(app, files)
    if which == "sessions differ":
        app.number_input(key="validate_upload_sessions").set_value(2)
        run(app)
    app.button(key="validate_import").click()
    run(app)
    shown = " ".join(texts(app.error)).replace("\\", "")  # as it reads, without escapes
    assert "nothing was stored" in shown and message in shown, shown
    assert str(tmp_path) not in shown and "planner-bundle-" not in shown  # no server paths
    assert loadtests(store()) == []
