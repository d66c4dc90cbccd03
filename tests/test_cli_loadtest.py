"""``planner loadtest``: running, importing, listing and showing load tests, and the
calibration it stores reaching ``simulate`` and ``recommend``.

Most runs put ``SleepBackend`` in place of the PyTorch model (``torch_backend`` is
patched), so they take a second; one test runs the real model on this CPU."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import pytest

import planner.validate.loadtest as loadtest_module
from planner.curves.fit import fit_curve
from planner.plan.resolve import default_curve
from planner.store.repository import Store
from planner.validate.loadtest_store import load_loadtest, loadtests
from planner.validate.worker.backends import SleepBackend

SUMMARY = "session,fps,overwritten\n0,15-19,20-25%\n1,15-19,20-25%\n2,15-19,20-25%\n"


@pytest.fixture
def sleeping(store: Store, monkeypatch: pytest.MonkeyPatch) -> str:
    """The default curve's id, with the load test's model replaced by sleeps of it."""
    curve = default_curve(store)
    table = fit_curve(curve.points).table(64)
    monkeypatch.setattr(loadtest_module, "torch_backend", lambda *_a: SleepBackend(table))
    return curve.id


def test_bad_options_are_all_reported_and_nothing_is_stored(cli: Any, store: Store) -> None:
    run = cli("loadtest", "--sessions", "0,2", "--policies", "fastest", "--fps", "-3",
              "--camera", "big", "--pre-ms", "4")  # fmt: skip
    assert run.status == 2
    lines = run.err.strip().splitlines()
    assert len(lines) == 5, lines
    assert all(line.startswith("planner: ") for line in lines)
    assert loadtests(store) == []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("import",), "give the file to import"),
        (("show",), "give the id"),
        (("show", "7"), "no stored load test has the id 7"),
        (("oops",), "invalid choice"),
        (("--format", "bundle"), "--format is for import"),
        (("--find-cap", "3", "--seed", "2"), "--find-cap draws seeds from 0"),
        (("--calibration", "latest"), "--calibration needs --curve"),
    ],
)
def test_each_misuse_gets_one_clear_line(cli: Any, store: Store, args: tuple[str, ...],
                                         message: str) -> None:  # fmt: skip
    run = cli("loadtest", *args)
    assert run.status == 2 and message in run.err
    assert loadtests(store) == []


def test_a_load_test_runs_stores_and_shows(cli: Any, store: Store, sleeping: str,
                                           tmp_path: Path) -> None:  # fmt: skip
    out = tmp_path / "frames.csv"
    run = cli("loadtest", "--curve", sleeping, "--sessions", "1-2", "--policies",
              "batch-all,round-robin", "--duration-s", "0.4", "--out", out)  # fmt: skip
    assert run.status == 0, run.err
    assert "stored load test 1" in run.err and "stored calibration" in run.err
    assert "measured / predicted" in run.out and "arrival lateness: p50" in run.out
    with out.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert {r["policy"] for r in rows} == {"batch-all", "round-robin"}
    assert {r["status"] for r in rows} <= {"delivered", "overwritten", "expired", "pending"}
    stored = load_loadtest(store, 1)
    assert len(stored.runs) == 4 and stored.calibration is not None
    listed = cli("loadtest", "list")
    assert "measured" in listed.out and sleeping in listed.out
    shown = cli("loadtest", "show", "1", "--json")
    assert shown.status == 0 and len(shown.json["runs"]) == 4
    assert shown.json["calibration"]["loadtest"] == 1


def test_the_stored_calibration_reaches_simulate_and_recommend(cli: Any, store: Store,
                                                               sleeping: str) -> None:  # fmt: skip
    assert cli("loadtest", "--curve", sleeping, "--sessions", "2", "--policies", "batch-all",
               "--duration-s", "0.4").status == 0  # fmt: skip
    calibration = load_loadtest(store, 1).calibration
    assert calibration is not None
    quick = ("--seeds", "2", "--duration-s", "2", "--max-sessions", "4", "--policies", "batch-all")
    calibrated = cli("recommend", "--curve", sleeping, *quick, "--json").json
    assert calibrated["calibration"]["id"] == calibration.id
    assert calibrated["calibration"]["loadtest"] == 1
    plain = cli("recommend", "--curve", sleeping, *quick, "--calibration", "none", "--json").json
    assert plain["calibration"] is None and plain["latest_calibration"] == calibration.id
    said = cli("recommend", "--curve", sleeping, *quick)
    assert "Calibrated by load test 1" in said.out
    simulated = cli("simulate", "--curve", sleeping, "--sessions", "2", "--policy", "batch-all",
                    "--duration-s", "2", "--json").json  # fmt: skip
    assert simulated["calibration"]["id"] == calibration.id
    link = cli("link", "--curve", sleeping, "--calibration", "latest")
    assert f"calibration={calibration.id}" in link.out
    assert "calibration=" not in cli("link", "--curve", sleeping).out  # only when asked


def test_ctrl_c_keeps_the_runs_that_finished(cli: Any, store: Store, sleeping: str,
                                             monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    real = loadtest_module.measure_run
    calls: list[int] = []

    def interrupted(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(loadtest_module, "measure_run", interrupted)
    run = cli("loadtest", "--curve", sleeping, "--sessions", "1-2", "--policies",
              "batch-all,oldest-first", "--duration-s", "0.3")  # fmt: skip
    assert run.status == 130 and "interrupted" in run.err
    assert len(load_loadtest(store, 1).runs) == 2 and load_loadtest(store, 1).interrupted


def test_an_imported_summary_shows_the_comparison_and_is_stored(
    cli: Any, store: Store, tmp_path: Path
) -> None:
    path = tmp_path / "summary.csv"
    path.write_text(SUMMARY, encoding="utf-8")
    scenario = ("--sessions", "3", "--policy", "round-robin", "--fps", "22", "--duration-s", "10")
    run = cli("loadtest", "import", path, "--points", "1:19.6,2:39.2", *scenario, "--seeds", "2")
    assert run.status == 0, run.err
    assert "15–19 / 17.1 (inside)" in run.out
    assert "20%–25% / 22.3% (inside)" in run.out
    assert loadtests(store)[0]["source"] == "imported per-session summary"
    missing = cli("loadtest", "import", path, "--points", "1:19.6")
    assert missing.status == 2 and "import needs --sessions and --policy" in missing.err


def test_a_stored_infinite_value_is_null_in_show_json_and_the_document_is_whole(
    cli: Any, store: Store, tmp_path: Path, db_path: Path
) -> None:
    """An older planner stored a 5,000-digit figure as inf; ``show --json`` stopped with
    a traceback half-way through its document. Non-finite numbers are written as null."""
    import duckdb

    path = tmp_path / "summary.csv"
    path.write_text(SUMMARY, encoding="utf-8")
    scenario = ("--sessions", "3", "--policy", "round-robin", "--fps", "22", "--duration-s", "10")
    assert cli("loadtest", "import", path, "--points", "1:19.6,2:39.2", *scenario).status == 0
    with duckdb.connect(str(db_path)) as raw:
        raw.execute("UPDATE loadtests SET pre_ms = 'inf'::DOUBLE, post_ms = 'nan'::DOUBLE")
    shown = cli("loadtest", "show", "1", "--json")
    assert shown.status == 0 and shown.err == "", shown.err[-2000:]
    assert shown.json["pre_ms"] is None and shown.json["post_ms"] is None
    assert len(shown.json["runs"]) == 1  # the rest of the document is there


@pytest.mark.torch
def test_a_real_load_test_on_this_cpu(cli: Any, store: Store, tmp_path: Path) -> None:
    run = cli("loadtest", "--sessions", "1-2", "--policies", "batch-all", "--duration-s", "1",
              "--resolution", "16x9", "--device", "cpu", "--threads", "1", "--warmup", "1",
              "--rounds", "1", "--repetitions", "3", "--camera", "64x36", "--json")  # fmt: skip
    assert run.status == 0, run.err
    document = run.json
    assert [r["sessions"] for r in document["runs"]] == [1, 2]
    assert document["pre_ms"] > 0 and document["lateness_ms"]["arrivals"] > 0
    assert document["options"]["threads"] == 1
    assert store.curve(document["curve"]).source == "measured"
