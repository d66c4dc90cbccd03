"""``planner loadtest --target``: load tests against a real Triton Inference Server
(``tests/triton_server.py``: a model that sleeps 2 + 0.5 b ms per batch of b behind a
dynamic batcher of B 8 and 2000 µs), checked against what the server itself counted.

The server starts once for the session (about 5–15 s here); each load test runs short
sessions for a second or two."""

from __future__ import annotations

from typing import Any

import pytest

from planner.store.repository import Store
from planner.validate.loadtest_store import load_loadtest, loadtests
from planner.validate.worker.frames import DELIVERED, PENDING
from tests.conftest import PYTRITON_MISSING
from tests.triton_server import MAX_BATCH, MODEL, QUEUE_DELAY_US, free_ports

pytest.importorskip("pytriton", reason=PYTRITON_MISSING)
pytestmark = pytest.mark.triton

QUICK = ("--warmup", "2", "--repetitions", "8")


def _curve_count(store: Store) -> int:
    return len(store.curves())


def _check_against_the_server(store: Store, protocol: str, sessions: list[int]) -> Any:
    test = load_loadtest(store, 1, records=True)
    env = test.environment
    assert test.source == "server" and env["protocol"] == protocol and env["model"] == MODEL
    assert [r.sessions for r in test.runs] == sessions
    assert env["max_batch_size"] == MAX_BATCH and env["max_queue_delay_us"] == QUEUE_DELAY_US
    for run, note in zip(test.runs, env["runs"], strict=True):
        s = run.scenario
        assert (s.policy, s.max_batch, s.max_queue_delay_us) == ("triton", 8, 2000.0)
        records = run.records
        assert records is not None
        sent = int((records.arrival_ms < s.duration_ms).sum())
        delivered = records.count(DELIVERED)
        # Every frame due before the end was sent and answered: within the run delivered,
        # after its end still at the server when it ended (pending, as the simulator
        # counts a queue left at the end); the frames due after the end never left.
        late = records.count(PENDING) - (records.frames - sent)
        assert sent > 0 and delivered > 0 and late == note["frames"]["after the end"] >= 0
        assert delivered + late == sent == note["frames"]["delivered"]
        answered = records.batch_end_ms[records.status == DELIVERED]
        assert (answered <= s.duration_ms).all()
        server = note["server"]
        # The server's own count: one frame per request, its batches adding up to them.
        assert server["frames"] == sent and server["succeeded"] == sent
        batches = {int(b): n for b, n in server["batches"].items()}
        assert sum(b * n for b, n in batches.items()) == sent
        assert sum(batches.values()) == server["executions"]
        assert max(batches) <= MAX_BATCH
        assert run.measured.frames == delivered and run.predicted.frames > 0
    single = store.curve(env["curves"]["single"])
    concurrent = store.curve(env["curves"]["concurrent"])
    assert test.curve.id == single.id
    for curve, way in ((single, "single"), (concurrent, "concurrent")):
        assert curve.environment["way"] == way
        assert curve.environment["server"].startswith(f"{protocol}://")
        assert curve.environment["protocol"] == protocol and curve.environment["model"] == MODEL
        assert curve.batches == tuple(range(1, max(sessions) + 1))
    # The single-request curve carries the per-request cost (its points less one request's
    # cost), so its plans cost b single-frame requests as the server does; the concurrent
    # curve has them in its points already.
    assert single.per_request_ms == env["per_request_ms"] >= 0
    assert concurrent.per_request_ms == 0.0
    medians = single.environment["client_median_ms"]
    queued = single.environment["queue_ms"]
    for p in single.points:
        expected = medians[str(p.batch)] - queued[str(p.batch)] - single.per_request_ms
        assert p.latency_ms == pytest.approx(max(expected, 1e-3))
    # The prediction is a server that queues every frame, on that curve.
    assert {r.scenario.queue for r in test.runs} == {"all"}
    # The concurrent sweep's b requests ran as one batch of b on the server.
    ran = concurrent.environment["server_batches"]
    assert any(str(b) in ran[str(b)] for b in concurrent.batches if b > 1)
    return test


def test_a_grpc_load_test_records_what_the_server_counted(
    cli: Any, store: Store, triton_server: tuple[int, int]
) -> None:
    _, grpc = triton_server
    run = cli("loadtest", "--target", f"grpc://127.0.0.1:{grpc}", "--model", MODEL,
              "--sessions", "1,2", "--duration-s", "2", "--fps", "30", *QUICK)  # fmt: skip
    assert run.status == 0, run.err
    assert "measuring the server: batch 2" in run.err and "2 sessions, triton" in run.err
    assert "measured / predicted" in run.out and "each request beyond the first" in run.out
    test = _check_against_the_server(store, "grpc", [1, 2])
    shown = cli("loadtest", "show", str(test.id), "--json")
    assert shown.status == 0 and shown.json["source"] == "server"


def test_an_http_load_test_records_what_the_server_counted(
    cli: Any, store: Store, triton_server: tuple[int, int]
) -> None:
    http, _ = triton_server
    run = cli("loadtest", "--target", f"http://127.0.0.1:{http}", "--model", MODEL,
              "--sessions", "2", "--duration-s", "1", "--input-shape", "3,16,16",
              *QUICK)  # fmt: skip
    assert run.status == 0, run.err
    _check_against_the_server(store, "http", [2])


def test_bad_targets_get_one_line_and_nothing_is_stored(
    cli: Any, store: Store, triton_server: tuple[int, int]
) -> None:
    http, grpc = triton_server
    (closed,) = free_ports(1)
    cases = [
        (f"grpc://127.0.0.1:{grpc}", "nope", "has no model 'nope'"),
        (f"http://127.0.0.1:{http}", "nope", "has no model 'nope'"),
        (f"grpc://127.0.0.1:{closed}", MODEL, f"cannot reach the server at grpc://127.0.0.1:{closed}"),
        (f"http://127.0.0.1:{closed}", MODEL, f"cannot reach the server at http://127.0.0.1:{closed}"),
        (f"ftp://127.0.0.1:{grpc}", MODEL, "the scheme must be grpc or http"),
        ("grpc://127.0.0.1", MODEL, "names no port"),
    ]  # fmt: skip
    before = _curve_count(store)
    for target, model, message in cases:
        run = cli("loadtest", "--target", target, "--model", model, "--duration-s", "0.5")
        assert run.status == 2, (target, run.err)
        lines = run.err.strip().splitlines()
        assert len(lines) == 1 and message in lines[0], (target, lines)
    assert loadtests(store) == [] and _curve_count(store) == before


def test_ctrl_c_keeps_the_runs_against_the_server_that_finished(
    cli: Any, store: Store, triton_server: tuple[int, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    import planner.validate.server.loadtest as server_loadtest

    real = server_loadtest.drive
    calls = []

    async def drive(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return await real(*args, **kwargs)

    monkeypatch.setattr(server_loadtest, "drive", drive)
    _, grpc = triton_server
    run = cli("loadtest", "--target", f"grpc://127.0.0.1:{grpc}", "--model", MODEL,
              "--sessions", "1,2", "--duration-s", "0.5", *QUICK)  # fmt: skip
    assert run.status == 130, run.err
    assert "interrupted" in run.err
    stored = load_loadtest(store, 1)
    assert stored.interrupted and [r.sessions for r in stored.runs] == [1]


def test_the_seat_cap_is_searched_on_the_server_and_reported(
    cli: Any, store: Store, triton_server: tuple[int, int], tmp_path: Any
) -> None:
    _, grpc = triton_server
    report = tmp_path / "accuracy.md"
    run = cli("loadtest", "--target", f"grpc://127.0.0.1:{grpc}", "--model", MODEL,
              "--sessions", "1,2", "--duration-s", "1", "--find-cap", "2",
              "--budget-ms", "500", "--min-fps", "20", "--report", report, *QUICK)  # fmt: skip
    assert run.status == 0, run.err
    (cap,) = load_loadtest(store, 1).caps
    # Two sessions of 30 fps on a model of a few ms per batch meet a 500 ms budget.
    assert (cap.policy, cap.largest, cap.measured) == ("triton", 2, 2)
    assert "seat cap, triton: measured 2" in run.out
    text = report.read_text(encoding="utf-8")
    assert "predictions are from a KServe v2 server" in text and f"{MODEL} at grpc://" in text
    assert "a server's records hold no batches" in text  # no calibration from fake batches
