"""The accuracy report: a load test judged as SPEC §5.2 asks (loaded runs only, a
calibration fitted on odd session counts and judged on even ones, seat caps), written as
Markdown by ``planner loadtest --report``.

The worker here is ``SleepBackend`` sleeping a known slowdown of the curve; no test
asserts a figure that depends on this machine's speed (the report publishes those)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import planner.validate.loadtest as loadtest_module
from planner import display
from planner.curves.curve import Point, make_curve
from planner.curves.fit import fit_curve
from planner.plan.request import Criteria
from planner.store.repository import Store
from planner.validate.accuracy import accuracy, markdown
from planner.validate.loadtest import calibrate, run_loadtest
from planner.validate.loadtest_store import loadtests
from planner.validate.measured_vs_predicted import error_stats
from planner.validate.options import LoadTestOptions
from planner.validate.runs import LoadTest
from planner.validate.worker.backends import SleepBackend

CURVE = make_curve(
    model="tiny",
    card="test-card",
    points=[Point(1, 8.0), Point(2, 14.0), Point(4, 26.0), Point(8, 50.0)],
)
OPTIONS = LoadTestOptions(sessions=(1, 2, 3, 4), policies=("batch-all", "round-robin"),
                          fps=60.0, duration_s=0.6)  # fmt: skip
CRITERIA = Criteria(budget_ms=60.0, min_fps=50.0)


def slower_worker() -> SleepBackend:
    """A worker whose batches take 2 ms + 1 ms per frame longer than the curve says."""
    table = fit_curve(CURVE.points).table(64)
    return SleepBackend([ms + 2.0 + 1.0 * b for b, ms in enumerate(table, start=1)])


@pytest.fixture(scope="module")
def test_run() -> LoadTest:
    return run_loadtest(OPTIONS, curve=CURVE, backend=slower_worker(), stage_ms=(0.0, 0.0),
                        criteria=CRITERIA, find_cap_upto=5)  # fmt: skip


def test_the_calibration_is_fitted_on_odd_counts_and_judged_on_even_ones(
    test_run: LoadTest,
) -> None:
    judged = accuracy(test_run, CRITERIA)
    odd = [r for r in test_run.runs if r.sessions % 2 == 1]
    assert judged.held_out == calibrate(odd, CURVE.id)
    assert judged.held_out != test_run.calibration  # not the one fitted on every run
    assert judged.loaded == tuple(r for r in test_run.runs if r.loaded)
    assert judged.judged == tuple(r for r in judged.loaded if r.sessions % 2 == 0)
    assert {test_run.runs[i].sessions % 2 for i in judged.calibrated} == {0}
    assert list(judged.before) == error_stats([(r.measured, r.predicted) for r in judged.judged])
    every = error_stats([(r.measured, r.predicted) for r in judged.loaded])
    assert list(judged.every) == every


def test_caps_searched_on_the_worker_stand_beside_the_prediction(test_run: LoadTest) -> None:
    judged = accuracy(test_run, CRITERIA)
    assert [c.policy for c in judged.caps] == list(OPTIONS.policies)
    for row, searched in zip(judged.caps, test_run.caps, strict=True):
        assert row.how == "searched on the worker"
        assert (row.measured, row.measured_reason) == (searched.measured, searched.measured_reason)
        assert row.calibrated is not None


def test_without_a_search_the_cap_is_read_off_runs_that_climb_from_one(
    test_run: LoadTest,
) -> None:
    from dataclasses import replace

    unsearched = replace(test_run, caps=())
    judged = accuracy(unsearched, CRITERIA)
    searched = {c.policy: c for c in test_run.caps}
    for row in judged.caps:
        assert row.how == "read off the runs" and row.searched_to == 4
        # The runs at 1..4 are the search's own runs when its cap is below 4.
        if searched[row.policy].measured < 4:
            assert row.measured == searched[row.policy].measured
    gappy = replace(unsearched, runs=tuple(r for r in test_run.runs if r.sessions != 2))
    assert accuracy(gappy, CRITERIA).caps == ()


def test_the_page_says_what_ran_the_targets_and_every_run(test_run: LoadTest) -> None:
    judged = accuracy(test_run, CRITERIA)
    text = markdown(judged, "planner loadtest --sessions 1-4")
    assert text.startswith("# Accuracy\n")
    assert "planner loadtest --sessions 1-4" in text
    for heading in ("## What ran, and where", "## Errors against the targets",
                    "## Seat caps", "## Every run"):  # fmt: skip
        assert heading in text
    assert "Arrival timing" in text and "Load average" in text
    for stats in judged.after:
        if stats.median is not None:
            assert display.fraction(stats.median) in text
    for policy in OPTIONS.policies:
        for n in OPTIONS.sessions:
            assert f"\n| {n} | {policy} |" in text  # every run has its row
        assert f"\n| {policy} | " in text  # and every policy its seat cap


def test_a_test_with_nothing_to_judge_is_refused(test_run: LoadTest) -> None:
    from dataclasses import replace

    from planner.errors import BadInput

    with pytest.raises(BadInput, match="no runs"):
        accuracy(replace(test_run, runs=()))


@pytest.fixture
def sleeping(store: Store, monkeypatch: pytest.MonkeyPatch) -> str:
    store.add_curves([CURVE])
    monkeypatch.setattr(loadtest_module, "torch_backend", lambda *_a: slower_worker())
    return CURVE.id


def test_the_command_writes_the_report_and_refuses_a_bad_path_first(
    cli: Any, store: Store, sleeping: str, tmp_path: Path
) -> None:
    bad = cli("loadtest", "--curve", sleeping, "--sessions", "1-2", "--duration-s", "0.4",
              "--report", tmp_path / "missing" / "accuracy.md")  # fmt: skip
    assert bad.status == 2 and "--report" in bad.err and loadtests(store) == []
    report = tmp_path / "accuracy.md"
    run = cli("loadtest", "--curve", sleeping, "--sessions", "1-2", "--fps", "60",
              "--duration-s", "0.4", "--budget-ms", "60", "--report", report)  # fmt: skip
    assert run.status == 0, run.err
    text = report.read_text()
    assert f"planner loadtest --curve {sleeping} --sessions 1-2" in text
    assert "p99 end to end within 60 ms" in text
    again = tmp_path / "again.md"
    shown = cli("loadtest", "show", "1", "--budget-ms", "60", "--report", again)
    assert shown.status == 0, shown.err
    assert again.read_text() == text  # the page of the stored test, citing how it ran
