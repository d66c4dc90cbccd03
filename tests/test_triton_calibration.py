"""A server's load test closes the loop: it stores a calibration of the server's curve
that ``planner recommend`` then uses, and a server that restricts its statistics (as
PyTriton and hardened production servers do) still gets a load test, with what needs
the statistics said to be unavailable; ``--header`` carries the access token that opens
them and is never stored or shown. Against the suite's real Triton servers
(``tests/triton_server.py``): the open one, and the same with its statistics restricted.
Runs are a second or two; nothing here asserts how fast anything is."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from planner.store.calibrations import latest_calibration
from planner.store.repository import Store
from planner.validate.loadtest_store import load_loadtest, loadtests
from tests.conftest import PYTRITON_MISSING
from tests.triton_server import GRPC_PREFIX, MAX_BATCH, MODEL, QUEUE_DELAY_US, TOKEN_HEADER

pytest.importorskip("pytriton", reason=PYTRITON_MISSING)
pytestmark = pytest.mark.triton

QUICK = ("--warmup", "2", "--repetitions", "8")
UNAVAILABLE = "the batch sizes run and the busy time are unavailable"


def test_a_server_load_test_stores_a_calibration_that_recommend_uses(
    cli: Any, store: Store, triton_server: tuple[int, int], tmp_path: Path
) -> None:
    _, grpc = triton_server
    report = tmp_path / "accuracy.md"
    run = cli("loadtest", "--target", f"grpc://127.0.0.1:{grpc}", "--model", MODEL,
              "--sessions", "1-3", "--duration-s", "1", "--fps", "30", "--find-cap", "3",
              "--budget-ms", "500", "--min-fps", "20", "--report", report, *QUICK)  # fmt: skip
    assert run.status == 0, run.err
    test = load_loadtest(store, 1)
    calibration = test.calibration
    assert calibration is not None and calibration.loadtest == test.id
    # It belongs to the curve the runs were predicted on, and is that curve's newest.
    assert calibration.curve_id == test.curve.id == test.environment["curves"]["single"]
    found = latest_calibration(store, test.curve.id)
    assert found is not None and found.id == calibration.id
    assert "frame rate of the runs at 1–3 sessions" in calibration.note
    assert f"stored calibration {calibration.id}" in run.err
    text = report.read_text(encoding="utf-8")
    assert "(sessions 1 and 3)" in text  # fitted on the odd counts, judged on the even
    assert "The calibration fitted on every run and stored with the curve" in text
    assert "With the calibration stored with the curve (what `recommend` uses): triton" in text
    assert "## What the calibration leaves out" in text
    # Over the loaded runs, or every run where none loaded the server (a fast machine).
    loaded = any(r.loaded for r in test.runs)
    covered = "the loaded runs" if loaded else "every run (none loaded the server)"
    assert f"Their size, over {covered}, with the stored calibration" in text
    # The cap keeps the measured figures of the last count that held and the first that
    # failed (or, holding to the end, of the last two searched).
    (cap,) = test.caps
    last = min(cap.measured + 1, cap.largest)
    assert [b[0] for b in cap.boundary] == list(range(max(last - 1, 1), last + 1))
    assert cap.closeness(500.0, 20.0) is not None

    quick = ("--policies", "triton", "--queue", "all", "--seeds", "2", "--duration-s", "5")
    plan = cli("recommend", "--curve", test.curve.id, *quick, "--json")
    assert plan.status == 0, plan.err
    assert plan.json["calibration"]["id"] == calibration.id
    said = cli("recommend", "--curve", test.curve.id, *quick)
    assert calibration.description in said.out and "not calibrated" not in said.out
    ran = cli("simulate", "--curve", test.curve.id, "--policy", "triton", "--queue", "all",
              "--sessions", "2", "--duration-s", "2", "--json")  # fmt: skip
    assert ran.status == 0, ran.err
    assert ran.json["calibration"]["id"] == calibration.id
    plain = cli("recommend", "--curve", test.curve.id, *quick, "--calibration", "none", "--json")
    assert plain.status == 0 and plain.json["calibration"] is None


@pytest.mark.parametrize("protocol", ["grpc", "http"])
def test_restricted_statistics_leave_a_load_test_judged_on_the_client_side(
    cli: Any, store: Store, restricted_triton: tuple[int, int, str], protocol: str
) -> None:
    http, grpc, _ = restricted_triton
    port = grpc if protocol == "grpc" else http
    run = cli("loadtest", "--target", f"{protocol}://127.0.0.1:{port}", "--model", MODEL,
              "--sessions", "1,2", "--duration-s", "1", "--input-shape", "3,16,16",
              *QUICK)  # fmt: skip
    assert run.status == 0, run.err
    assert UNAVAILABLE in run.err and "does not give its statistics" in run.err
    test = load_loadtest(store, 1)
    assert [r.sessions for r in test.runs] == [1, 2]
    for r, note in zip(test.runs, test.environment["runs"], strict=True):
        assert note["server"] is None and "restricted" in note["statistics"]
        # The answers as the client saw them are judged; the busy time is unknown.
        assert r.measured.frames > 0 and r.measured.e2e_p99_ms is not None
        assert r.measured.gpu_busy_fraction is None and r.predicted.frames > 0
    single = store.curve(test.environment["curves"]["single"])
    assert single.environment["statistics"]  # the queue time is said to be unavailable
    # ... and taken as the batcher's delay, which a lone request short of the largest
    # batch waits in full.
    assert single.batches == (1, 2) and MAX_BATCH > 2
    assert single.environment["queue_ms"] == {
        "1": QUEUE_DELAY_US / 1000,
        "2": QUEUE_DELAY_US / 1000,
    }
    assert test.calibration is not None  # no statistics needed to calibrate


@pytest.mark.parametrize("protocol", ["grpc", "http"])
def test_a_header_opens_restricted_statistics_and_is_never_stored(
    cli: Any,
    store: Store,
    db_path: Path,
    restricted_triton: tuple[int, int, str],
    protocol: str,
) -> None:
    http, grpc, token = restricted_triton
    port, name = (grpc, GRPC_PREFIX + TOKEN_HEADER) if protocol == "grpc" else (http, TOKEN_HEADER)
    run = cli("loadtest", "--target", f"{protocol}://127.0.0.1:{port}", "--model", MODEL,
              "--sessions", "2", "--duration-s", "1", "--input-shape", "3,16,16",
              "--header", f"{name}={token}", *QUICK)  # fmt: skip
    assert run.status == 0, run.err
    assert UNAVAILABLE not in run.err
    (row,) = loadtests(store)
    test = load_loadtest(store, row["id"])
    (note,) = test.environment["runs"]
    server = note["server"]
    assert server is not None and server["frames"] == note["frames"]["delivered"]
    assert sum(int(b) * n for b, n in server["batches"].items()) == server["frames"]
    assert test.runs[0].measured.gpu_busy_fraction is not None
    assert f"{name}=***" in test.environment["command"]
    shown = cli("loadtest", "show", str(row["id"]), "--json")
    stored = b"".join(p.read_bytes() for p in db_path.parent.glob(f"{db_path.name}*"))
    for text in (run.out, run.err, shown.out, json.dumps(shown.json)):
        assert token not in text
    assert token.encode() not in stored
