"""``planner loadtest import`` takes the server's queue settings as ``planner simulate``
does (``--queue all``, ``--max-queue-size``, ``--queue-timeout-us``, ``--timeout-action``):
an imported Triton run is then predicted with a server that queues every frame."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import pytest

from planner.curves.curve import BATCHER_KEY, Point, make_curve
from planner.store.repository import Store
from planner.validate.loadtest_store import load_loadtest, loadtests

POINTS = "1:10,4:20"
"""Batch 4 in 20 ms: at most 200 frames/s under triton with a largest batch of 4, so 4
sessions at 30 fps (120 frames/s) are below saturation and 10 (300 frames/s) past it."""


def frames(tmp_path: Path, sessions: int) -> Path:
    """A per-frame file of ``sessions`` sessions at 30 fps for 5 s, every frame answered."""
    path = tmp_path / f"frames-{sessions}.csv"
    with path.open("w", newline="", encoding="utf-8") as handle:
        out = csv.writer(handle)
        out.writerow(["session", "capture_ms", "done_ms", "status"])
        for session in range(sessions):
            at = session * 3.0
            while at < 5000:
                out.writerow([f"cam{session}", round(at, 3), round(at + 15, 3), "delivered"])
                at += 1000 / 30
    return path


def imported(cli: Any, path: Path, sessions: int, *queue: str) -> dict[str, Any]:
    out = cli("loadtest", "import", path, "--points", POINTS, "--sessions", str(sessions),
              "--policy", "triton", "--fps", "30", "--duration-s", "5", "--max-batch", "4",
              *queue, "--json")  # fmt: skip
    assert out.status == 0, out.err
    (run,) = out.json["runs"]
    return dict(run)


@pytest.mark.parametrize("sessions", [4, 10])
def test_the_queue_changes_the_prediction_past_saturation_only(
    cli: Any, store: Store, tmp_path: Path, sessions: int
) -> None:
    path = frames(tmp_path, sessions)
    newest = imported(cli, path, sessions)
    queued = imported(cli, path, sessions, "--queue", "all")
    assert newest["measured"] == queued["measured"]  # the same file
    offered, served = sessions * 30, 4 / 0.020
    if offered < served:
        assert queued["predicted"] == newest["predicted"]
    else:
        # Newest-only drops what it cannot serve and keeps latency bounded; a queue keeps
        # every frame and its wait grows through the run.
        assert queued["predicted"]["e2e_p99_ms"] > 10 * newest["predicted"]["e2e_p99_ms"]
        assert queued["predicted"]["overwritten_fraction"] == 0.0
        assert newest["predicted"]["overwritten_fraction"] > 0.3
    stored = [load_loadtest(store, row["id"]).runs[0].scenario for row in loadtests(store)]
    assert sorted(s.queue for s in stored) == ["all", "newest"]


def test_the_queue_settings_reach_the_prediction(cli: Any, store: Store, tmp_path: Path) -> None:
    path = frames(tmp_path, 10)
    bounded = imported(cli, path, 10, "--queue", "all", "--max-queue-size", "4",
                       "--queue-timeout-us", "30000", "--timeout-action", "delay")  # fmt: skip
    scenario = load_loadtest(store, loadtests(store)[0]["id"]).runs[0].scenario
    assert (scenario.queue, scenario.max_queue_size, scenario.queue_timeout_us,
            scenario.timeout_action) == ("all", 4, 30000.0, "delay")  # fmt: skip
    unbounded = imported(cli, path, 10, "--queue", "all")
    assert bounded["predicted"]["e2e_p99_ms"] < unbounded["predicted"]["e2e_p99_ms"]


def test_queue_settings_that_do_not_go_together_are_one_line_and_store_nothing(
    cli: Any, store: Store, tmp_path: Path
) -> None:
    path = frames(tmp_path, 4)
    scenario = ("--points", POINTS, "--sessions", "4", "--policy", "triton", "--fps", "30",
                "--duration-s", "5")  # fmt: skip
    cases = [
        (("--max-queue-size", "4"), "--max-queue-size applies to --queue all only"),
        (("--queue", "some"), "--queue: not one of newest, all"),
        (("--queue", "all", "--timeout-action", "delay"), "--timeout-action needs"),
        (("--queue", "all", "--max-queue-size", "0"), "--max-queue-size"),
    ]
    for given, message in cases:
        out = cli("loadtest", "import", path, *scenario, *given)
        assert out.status == 2 and message in out.err, (given, out.err)
    assert loadtests(store) == []
    # A load test run here keeps each session's newest frame (the reference worker) or
    # queues every frame as its server does: the queue options are the import's.
    out = cli("loadtest", "--curve", "x" * 12, "--queue", "all")
    assert out.status == 2 and "--queue: for import" in out.err
    out = cli("loadtest", "--target", "grpc://127.0.0.1:1", "--model", "m", "--queue", "all")
    assert out.status == 2 and "--queue: for import" in out.err


def test_an_import_on_a_server_curve_takes_its_batcher(
    cli: Any, store: Store, tmp_path: Path
) -> None:
    points = (Point(1, 10.0), Point(4, 20.0))
    batcher = {BATCHER_KEY: {"max_batch": 2, "max_queue_delay_us": 0}}
    server = make_curve(model="det", card="server", points=points, source="measured",
                        environment=batcher)  # fmt: skip
    (curve,) = store.add_curves([server])
    scenario = ("--sessions", "4", "--policy", "triton", "--fps", "30", "--duration-s", "5")
    out = cli("loadtest", "import", frames(tmp_path, 4), "--curve", curve.id, *scenario,
              "--queue", "all")  # fmt: skip
    assert out.status == 0, out.err
    stored = load_loadtest(store, loadtests(store)[0]["id"]).runs[0].scenario
    assert (stored.max_batch, stored.max_queue_delay_us) == (2, 0.0)
