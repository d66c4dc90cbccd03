"""Load tests: the worker's runs against the simulator's prediction, stored and read back,
the measured seat cap's search, imports from other workers, and the command line.

Runs here use ``SleepBackend`` (batches as sleeps of the curve's own latencies) except
the tests marked ``torch``; no test asserts a figure that depends on this machine's speed.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from planner.curves.fit import fit_curve
from planner.errors import BadInput, NotFound
from planner.measure.options import MeasureOptions
from planner.plan.outcomes import failures
from planner.plan.request import Criteria
from planner.plan.resolve import default_curve
from planner.sim.scenario import Scenario
from planner.sim.stages import WorkerStages
from planner.sim.sweep import pooled_runs
from planner.store.calibrations import calibrations, latest_calibration, resolve
from planner.store.repository import Store
from planner.validate.judge import cap_of, pooled, prediction_request
from planner.validate.loadtest import run_loadtest
from planner.validate.loadtest_import import import_file, parse_range, summary_ranges
from planner.validate.loadtest_store import (
    _INSERT_FRAMES,
    load_loadtest,
    loadtests,
    save_loadtest,
    scenario_dict,
    scenario_from_dict,
)
from planner.validate.measured_vs_predicted import Figure, Summary, compare, error_stats
from planner.validate.options import LoadTestOptions, command_for
from planner.validate.worker.backends import SleepBackend
from planner.validate.worker.bundle import read_bundle, write_bundle
from planner.validate.worker.frames import COLUMNS
from planner.validate.worker.serve import serve

QUICK = LoadTestOptions(sessions=(1, 2), policies=("batch-all", "oldest-first"), duration_s=0.4)


@pytest.fixture
def tested(store: Store):  # type: ignore[no-untyped-def]
    curve = default_curve(store)
    table = fit_curve(curve.points).table(64)
    test = run_loadtest(QUICK, curve=curve, backend=SleepBackend(table), stage_ms=(0.0, 0.0))
    return store, test


def test_a_load_test_pairs_every_run_with_the_prediction_of_the_same_scenario(tested) -> None:  # type: ignore[no-untyped-def]
    _, test = tested
    assert [(r.sessions, r.policy) for r in test.runs] == [
        (1, "batch-all"), (1, "oldest-first"), (2, "batch-all"), (2, "oldest-first")
    ]  # fmt: skip
    for run in test.runs:
        assert run.records is not None
        assert run.records.scenario == run.scenario
        assert run.predicted_results is not None and run.predicted_results.scenario == run.scenario
        # The measured summary is the summary of the records, computed as a simulation's.
        assert run.measured.min_fps == run.records.results().min_fps
        assert run.measured.lateness_p50_ms is not None
    assert test.calibration is not None and test.calibration.curve_id == test.curve.id
    assert "load_average_start" in test.environment


def test_a_load_test_is_stored_whole_and_reads_back_the_same(tested) -> None:  # type: ignore[no-untyped-def]
    store, test = tested
    saved = save_loadtest(store, test)
    assert saved.id == 1 and saved.calibration is not None and saved.calibration.loadtest == 1
    back = load_loadtest(store, 1, records=True)
    assert [r.scenario for r in back.runs] == [r.scenario for r in test.runs]
    assert [r.measured for r in back.runs] == [r.measured for r in test.runs]
    assert [r.predicted for r in back.runs] == [r.predicted for r in test.runs]
    for mine, theirs in zip(back.runs, test.runs, strict=True):
        assert mine.records is not None and theirs.records is not None
        for name in COLUMNS:
            a, b = getattr(mine.records, name), getattr(theirs.records, name)
            assert np.array_equal(a, b, equal_nan=a.dtype.kind == "f"), name
    assert back.calibration == saved.calibration
    assert latest_calibration(store, test.curve.id) == saved.calibration
    assert loadtests(store)[0]["runs"] == 4
    with pytest.raises(NotFound):
        load_loadtest(store, 99)


def test_the_frame_insert_names_every_record_column_in_order() -> None:
    listed = _INSERT_FRAMES.split("(", 1)[1].split(")", 1)[0]
    assert [c.strip() for c in listed.split(",")][2:] == list(COLUMNS)


def test_a_scenario_survives_json() -> None:
    s = Scenario(
        latency_ms=(1.0, 2.0, 3.0), sessions=3, policy="triton", fps=(30.0, 15.0, 10.0),
        jitter_ms=1.5, stages=WorkerStages(network_ms=2.0, pre_ms=1.0, cpu_workers=2),
        memory_batch_limit=2,
    )  # fmt: skip
    assert scenario_from_dict(json.loads(json.dumps(scenario_dict(s)))) == s


def test_options_read_back_as_they_were_written() -> None:
    options = LoadTestOptions(
        sessions=(1, 3), policies=("triton",), fps=25.0, duration_s=4.0, seeds=2, camera="320x180",
        stages=WorkerStages(cpu_workers=2), threads=1,
        measure=MeasureOptions(resolution="32x18", precisions=("fp32",)),
    )  # fmt: skip
    again = LoadTestOptions.from_dict(json.loads(json.dumps(options.as_dict())))
    assert again.as_dict() == options.as_dict()


def test_bad_options_are_refused_with_every_problem() -> None:
    with pytest.raises(BadInput) as caught:
        LoadTestOptions(sessions=(0,), policies=("nope",), fps=-1.0, camera="big")
    problems = " | ".join(caught.value.problems)
    for part in ("session counts", "policies must be", "fps must be", "the camera must be"):
        assert part in problems


# -- the measured seat cap -------------------------------------------------------------


def test_the_cap_stops_at_the_first_failure_even_if_a_later_count_passes(store: Store) -> None:
    curve = default_curve(store)
    table = tuple(fit_curve(curve.points).table(64))
    criteria = Criteria(budget_ms=50.0)
    template = Scenario(latency_ms=table, sessions=1, policy="oldest-first", duration_s=5.0)
    (fine, starved), _ = pooled_runs([template, template.with_(sessions=12)], 2, 99.0)
    assert not failures(fine, criteria) and failures(starved, criteria)
    assert cap_of([fine, starved, fine], criteria)[0] == 1  # passing is not monotone
    cap, why = cap_of([fine, fine], criteria)
    assert cap == 2 and "largest tried" in why
    assert "at 12 sessions" in cap_of([starved], criteria)[1]


def test_measured_runs_are_pooled_as_the_recommendation_pools_simulations(store: Store) -> None:
    curve = default_curve(store)
    table = tuple(fit_curve(curve.points).table(64))
    s = Scenario(latency_ms=table, sessions=2, policy="batch-all", duration_s=0.4)
    runs = [serve(s.with_(seed=k), SleepBackend(table)) for k in range(2)]
    row = pooled(runs, 99.0)
    assert row.seeds == (0, 1)
    assert row.frames == sum(r.records().frame_latency.size for r in runs)
    assert row.min_fps == min(r.results().min_fps for r in runs)


def test_the_predicted_cap_comes_from_the_recommendation_on_the_same_scenarios(
    store: Store,
) -> None:
    fitted = fit_curve(default_curve(store).points)
    options = LoadTestOptions(sessions=(1,), policies=("oldest-first",), duration_s=5.0, seeds=3)
    request = prediction_request(options, fitted, "oldest-first", Criteria(), 6, (0.0, 0.0))
    assert request.policies == ("oldest-first",) and request.seeds == 3
    assert request.duration_s == 5.0 and request.max_sessions == 6
    with pytest.raises(BadInput, match="seeds from 0"):
        prediction_request(replace(options, seed=4), fitted, "oldest-first", Criteria(), 6,
                           (0.0, 0.0))  # fmt: skip


def test_a_calibration_that_leaves_the_gpu_nothing_predicts_no_seat_and_no_other_error(
    store: Store,
) -> None:
    """Only a calibration whose time outside the device alone exceeds the budget reads as
    0 seats; the same load test with a usable calibration gets a cap from the
    recommendation."""
    from planner.sim.calibration import Calibration
    from planner.validate.accuracy import predicted_cap
    from planner.validate.runs import LoadTest

    options = LoadTestOptions(sessions=(1,), policies=("oldest-first",), duration_s=2.0, seeds=1)
    test = LoadTest(curve=default_curve(store), options=options, runs=())
    criteria = Criteria(budget_ms=50.0)
    outside = Calibration("x", a_ms=0.0, c_ms=0.0, d_ms=60.0)
    assert predicted_cap(test, "oldest-first", criteria, 4, outside) == (0, 0, 0)
    usable = Calibration("x", a_ms=0.0, c_ms=0.0, d_ms=1.0)
    cap, low, high = predicted_cap(test, "oldest-first", criteria, 4, usable)
    assert 1 <= low <= cap <= high


# -- comparisons -----------------------------------------------------------------------


def test_a_range_says_inside_or_outside_and_a_value_gets_a_relative_error() -> None:
    from planner.validate.measured_vs_predicted import METRICS

    fps = METRICS[0]
    assert Figure(fps, (15.0, 19.0), 17.0).verdict == "inside"
    assert Figure(fps, (15.0, 19.0), 20.0).verdict == "outside (above)"
    assert Figure(fps, (15.0, 19.0), 14.0).verdict == "outside (below)"
    assert Figure(fps, (15.0, 19.0), 17.0).error is None  # no error claimed for a range
    assert Figure(fps, (20.0, 20.0), 22.0).error == pytest.approx(0.1)
    assert Figure(fps, None, 22.0).verdict == "-"


def test_error_statistics_are_the_median_and_largest_absolute_errors() -> None:
    pairs = [(Summary(min_fps=10.0), Summary(min_fps=11.0)),
             (Summary(min_fps=10.0), Summary(min_fps=8.0)),
             (Summary(min_fps=10.0), Summary(min_fps=10.5))]  # fmt: skip
    stats = error_stats(pairs, ("min_fps",))[0]
    assert stats.runs == 3
    assert stats.median == pytest.approx(0.1) and stats.largest == pytest.approx(0.2)
    assert [f.metric.name for f in compare(Summary(), Summary())][:2] == ["min_fps", "mean_fps"]


# -- imports ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "fraction", "expected"),
    [("16", False, (16.0, 16.0)), ("16-20", False, (16.0, 20.0)), ("16–20", False, (16.0, 20.0)),
     ("16 to 20", False, (16.0, 20.0)), ("20-25%", True, (0.2, 0.25)), ("0.2", True, (0.2, 0.2)),
     ("", False, None)],
)  # fmt: skip
def test_ranges_parse(text: str, fraction: bool, expected: object) -> None:
    assert parse_range(text, "fps", fraction=fraction) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("text", "fraction", "message"),
    [("20-15", False, "ends below"), ("20%", False, "only applies to overwritten"),
     ("25", True, "write a fraction"), ("fast", False, "not a number or a range")],
)  # fmt: skip
def test_bad_ranges_say_why(text: str, fraction: bool, message: str) -> None:
    with pytest.raises(BadInput, match=message):
        parse_range(text, "x", fraction=fraction)


def test_per_session_figures_allow_ranges_for_the_whole_run() -> None:
    ranges = summary_ranges(
        {
            "fps": [(15.0, 19.0), (16.0, 18.0), (15.0, 19.0)],
            "overwritten": [(0.2, 0.25)] * 3,
            "p99_ms": [None, (40.0, 50.0), None],
        }
    )
    assert ranges["min_fps"] == (15.0, 18.0)  # the slowest session lies between these
    assert ranges["mean_fps"] == pytest.approx((15.333, 18.667), abs=1e-3)
    assert ranges["overwritten_fraction"] == (0.2, 0.25)
    assert ranges["e2e_p99_ms"] is None  # not every session gives it: unknown, not guessed


SUMMARY = """session,fps,p50_ms,p99_ms,overwritten
0,15-19,,,20-25%
1,15–19,,,20-25%
2,15-19,,,20-25%
"""


def _scenario(store: Store, **changes: object) -> Scenario:
    fitted = fit_curve(default_curve(store).points)
    base = Scenario(latency_ms=tuple(fitted.table(64)), sessions=3, policy="oldest-first",
                    fps=(30.0,), duration_s=10.0)  # fmt: skip
    return replace(base, **changes)  # type: ignore[arg-type]


def test_an_imported_summary_with_ranges_is_compared_range_by_range(
    store: Store, tmp_path: Path
) -> None:
    # One card that runs a frame in 19.6 ms serves about 51 frames a second: three
    # sessions at 22 fps in turn get 17 fps each and lose about 23% of their frames.
    from planner.curves.curve import Point, make_curve

    curve = make_curve(model="m", card="c", points=[Point(1, 19.6), Point(2, 39.2)])
    fitted = fit_curve(curve.points)
    scenario = Scenario(latency_ms=tuple(fitted.table(64)), sessions=3, policy="round-robin",
                        fps=(22.0,), duration_s=10.0)  # fmt: skip
    path = tmp_path / "summary.csv"
    path.write_text(SUMMARY, encoding="utf-8")
    test = import_file(path, scenario, curve, seeds=2)
    figures = {f.metric.name: f for f in test.runs[0].figures()}
    assert figures["min_fps"].measured == (15.0, 19.0)
    assert figures["min_fps"].verdict == "inside"
    assert figures["mean_fps"].verdict == "inside"
    assert figures["overwritten_fraction"].measured == (0.2, 0.25)
    assert figures["overwritten_fraction"].verdict == "inside"
    assert all(figures[n].error is None for n in ("min_fps", "mean_fps", "overwritten_fraction"))
    # The file gives no latencies and no GPU figures: nothing is claimed about them.
    for name in ("e2e_p50_ms", "e2e_p99_ms", "p50_ms", "gpu_busy_fraction"):
        assert figures[name].measured is None and figures[name].verdict == "-"
    # A summary the prediction does not fit is said to be outside, and on which side.
    path.write_text(SUMMARY.replace("15-19", "25-28").replace("15–19", "25-28"), "utf-8")
    figures = {f.metric.name: f for f in import_file(path, scenario, curve, 2).runs[0].figures()}
    assert figures["min_fps"].verdict == "outside (below)"


def test_a_summary_of_the_wrong_session_count_is_refused(store: Store, tmp_path: Path) -> None:
    path = tmp_path / "summary.csv"
    path.write_text(SUMMARY, encoding="utf-8")
    with pytest.raises(BadInput, match="the file has 3 session"):
        import_file(path, _scenario(store, sessions=4), default_curve(store), seeds=1)


def test_imported_per_frame_records_are_summarised(store: Store, tmp_path: Path) -> None:
    lines = ["session,capture_ms,done_ms,status"]
    for k in range(300):
        for session in ("cam-a", "cam-b"):
            delivered = k % 3 != 0
            done = f"{1000 + k * 33.3 + 20:.1f}" if delivered else ""
            lines.append(f"{session},{1000 + k * 33.3:.1f},{done},"
                         f"{'delivered' if delivered else 'overwritten'}")  # fmt: skip
    path = tmp_path / "frames.csv"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    test = import_file(path, _scenario(store, sessions=2, duration_s=10.0), default_curve(store), 1)
    measured = test.runs[0].measured
    assert measured.mean_fps == pytest.approx(200 / 10.0)
    assert measured.e2e_p50_ms == pytest.approx(20.0, abs=0.11)
    assert measured.overwritten_fraction == pytest.approx(1 / 3, abs=1e-9)
    assert measured.p50_ms is None  # no GPU-side figure in such a file


def test_bad_per_frame_rows_are_listed_by_line(store: Store, tmp_path: Path) -> None:
    path = tmp_path / "frames.csv"
    path.write_text("session,capture_ms,done_ms,status\n0,1,2,delivered\n0,x,3,delivered\n"
                    "1,5,,delivered\n1,6,7,lost\n", encoding="utf-8")  # fmt: skip
    with pytest.raises(BadInput) as caught:
        import_file(path, _scenario(store, sessions=2), default_curve(store), 1)
    text = "\n".join(caught.value.problems)
    assert "line 3: capture_ms" in text and "line 4: a delivered frame" in text
    assert "line 5: status 'lost'" in text


def test_a_bundle_round_trips_through_files_and_is_checked(tested, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    _, test = tested
    runs = [r.records for r in test.runs if r.records is not None]
    write_bundle(tmp_path / "b", curve=test.curve.as_dict(), options=test.options.as_dict(),
                 runs=runs, pre_ms=0.0, post_ms=0.0, environment={"where": "here"})  # fmt: skip
    manifest, frames = read_bundle(tmp_path / "b")
    assert manifest["environment"] == {"where": "here"} and sorted(frames) == [0, 1, 2, 3]
    imported = import_file(tmp_path / "b", None, None, seeds=1)
    assert imported.curve.id == test.curve.id
    assert [r.measured for r in imported.runs] == [r.measured for r in test.runs]
    assert imported.calibration is not None
    # A bundle whose records do not hold together is refused with the reason.
    text = (tmp_path / "b" / "frames.csv").read_text()
    (tmp_path / "b" / "frames.csv").write_text(text.replace(",delivered", ",pending", 1))
    with pytest.raises(BadInput, match="run 0"):
        import_file(tmp_path / "b", None, None, seeds=1)


def test_a_file_that_is_no_load_test_is_named_as_such(tmp_path: Path) -> None:
    path = tmp_path / "x.csv"
    path.write_text("batch,latency_ms\n1,3\n")
    with pytest.raises(BadInput, match="not a load test file"):
        import_file(path, None, None, 1)


# -- calibrations by choice ------------------------------------------------------------


def test_choosing_a_calibration(tested) -> None:  # type: ignore[no-untyped-def]
    store, test = tested
    assert resolve(store, None, test.curve.id) is None  # nothing stored yet
    saved = save_loadtest(store, test)
    assert resolve(store, None, test.curve.id) == saved.calibration  # latest by default
    assert resolve(store, "none", test.curve.id) is None
    assert resolve(store, saved.calibration.id, test.curve.id) == saved.calibration  # type: ignore[union-attr]
    with pytest.raises(BadInput, match="belongs to the curve"):
        resolve(store, saved.calibration.id, "aaaaaaaaaaaa")  # type: ignore[union-attr]
    with pytest.raises(NotFound):
        resolve(store, "bbbbbbbbbbbb", test.curve.id)
    assert calibrations(store, test.curve.id) == [saved.calibration]


def test_the_command_to_run_elsewhere_reads_back_as_the_same_options() -> None:
    from planner.cli import build_parser
    from planner.cli.loadtest import options_from_args

    options = LoadTestOptions(
        sessions=(1, 2, 4), policies=("triton",), fps=25.0, duration_s=8.0, camera="640x360",
        stages=WorkerStages(cpu_workers=2), threads=1,
        measure=MeasureOptions(resolution="64x36", device="cpu"),
    )  # fmt: skip
    argv = command_for(options)
    assert argv[:2] == ["planner", "loadtest"]
    again = options_from_args(build_parser().parse_args(argv[1:]))
    assert again.as_dict() == options.as_dict()
