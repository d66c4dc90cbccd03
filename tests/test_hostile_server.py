"""``planner loadtest --target`` against a hostile KServe v2 server
(``tests/hostile_server.py``), over HTTP and gRPC: whatever the server does (hang, answer
late, fail, close the connection, send garbage, describe its model in a way that cannot
be read, count what cannot be true, withhold its statistics, die part-way), the load test
ends in one line with status 2 and stores nothing, or keeps and marks the runs finished
before the failure, or goes on without what the server would not give.

No verdict rests on how long something took: the time limits are set short through the
options (a hanging call counts as timed out once its limit is over, however busy the
machine), and the tests assert what happened and in which order."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from planner.cli.schema import schema
from planner.store.repository import Store
from planner.validate.loadtest_store import load_loadtest, loadtests

pytest.importorskip("tritonclient.grpc.aio", reason="needs tritonclient, the server extra")
pytest.importorskip("tritonclient.http.aio", reason="needs tritonclient, the server extra")

from tests.hostile_server import MODEL, Behaviour, serve

PROTOCOLS = ("http", "grpc")
QUICK = ("--sessions", "1", "--duration-s", "0.3", "--warmup", "0", "--repetitions", "1",
         "--batches", "1,2")  # fmt: skip
"""A load test of one short run and a curve of batches 1 and 2 timed once each."""
LIMIT = ("--call-timeout-s", "0.5")
"""Half a second for any one call, where the server makes a call wait (the options a
load test had before the limits existed suffice for the rest)."""
SWEEP_READINGS = 8
"""The statistics the curves read with QUICK: two ways, two batch sizes, before and after."""


@pytest.fixture
def hostile() -> Iterator[Behaviour]:
    behaviour = Behaviour()
    with serve(behaviour) as ports:
        behaviour.ports = dict(zip(PROTOCOLS, ports, strict=True))  # type: ignore[attr-defined]
        yield behaviour


def _loadtest(cli: Any, server: Behaviour, protocol: str, *extra: str) -> Any:
    port = server.ports[protocol]  # type: ignore[attr-defined]
    return cli("loadtest", "--target", f"{protocol}://127.0.0.1:{port}", "--model", MODEL,
               *QUICK, *extra)  # fmt: skip


def _one_line(run: Any) -> str:
    """The run's one error line: status 2, no traceback, exactly one ``planner:`` line
    and it is the last."""
    assert run.status == 2, run.err
    assert "Traceback" not in run.err and "Traceback" not in run.out
    lines = run.err.strip().splitlines()
    errors = [line for line in lines if line.startswith("planner:")]
    assert errors == [lines[-1]], lines
    return lines[-1]


def _server_curves(store: Store) -> list[Any]:
    return [c for c in store.curves() if "server" in (c.environment or {})]


def _nothing_stored(store: Store) -> None:
    assert loadtests(store) == [] and _server_curves(store) == []


FAILURES = [
    # (protocols, what the server does, what the one line says)
    (PROTOCOLS, {"infer": "hang"}, "an inference of 1 frame): no answer within 0.5 s"),
    (PROTOCOLS, {"infer": "slow", "slow_s": 30.0}, "no answer within 0.5 s"),
    (("http",), {"infer": "error"}, "[500] internal error"),
    (("grpc",), {"infer": "error"}, "StatusCode.INTERNAL"),
    (PROTOCOLS, {"infer": "close"}, "an inference of 1 frame): "),
    (("http",), {"infer": "garbage"}, "an inference of 1 frame): "),
    (("http",), {"infer": "huge"}, "an inference of 1 frame): "),
    (("http",), {"infer": "missing"}, "unknown model"),
    (("grpc",), {"infer": "missing"}, "StatusCode.NOT_FOUND"),
    (PROTOCOLS, {"infer": "shape"}, "the output 'y' has the shape [1, 3] for 1 frames, where "
     "the model's metadata says [1, 2]"),
    (("http",), {"die_after_infers": 3}, "an inference of 1 frame): Server disconnected"),
    (("grpc",), {"die_after_infers": 3}, "an inference of 1 frame): [StatusCode.UNAVAILABLE]"),
    (PROTOCOLS, {"metadata": {"inputs": [{"name": "x", "shape": [-1, 3]}]}},
     "describes 'm' in a way that cannot be read (input 'x' has no datatype)"),
    (("http",), {"metadata": [1, 2]}, "cannot be read (its metadata is not a document)"),
    (PROTOCOLS, {"metadata": {"inputs": [{"name": "x", "datatype": "COMPLEX", "shape": [-1]}]}},
     "is COMPLEX; a load test sends numeric tensors only"),
    (PROTOCOLS, {"metadata": {"inputs": [{"name": "x", "datatype": "FP32",
                                          "shape": [-1, 1e5, 1e5, 1e5]}]}},
     "MiB, above the 256 MiB a load test sends"),
    (("http",), {"config": {"max_batch_size": "lots"}},
     "cannot be read (max_batch_size 'lots' is not a number)"),
]  # fmt: skip
CASES = [(p, how, said) for protocols, how, said in FAILURES for p in protocols]


@pytest.mark.parametrize(("protocol", "how", "said"), CASES)
def test_every_failure_of_the_server_is_one_line_and_stores_nothing(
    cli: Any, store: Store, hostile: Behaviour, protocol: str, how: dict[str, Any], said: str
) -> None:
    for name, value in how.items():
        setattr(hostile, name, value)
    waits = hostile.infer in ("hang", "slow")
    line = _one_line(_loadtest(cli, hostile, protocol, *(LIMIT if waits else ())))
    assert said in line and f"{protocol}://127.0.0.1:" in line, line
    assert len(line) < 400
    _nothing_stored(store)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_time_limit_bounds_the_whole_load_test(
    cli: Any, store: Store, hostile: Behaviour, protocol: str
) -> None:
    # Each call answers after 0.4 s, well within its own limit; the curve needs at least
    # four of them one after the other, more than the whole test's second.
    hostile.infer, hostile.slow_s = "slow", 0.4
    run = _loadtest(cli, hostile, protocol, "--call-timeout-s", "30", "--time-limit-s", "1")
    assert "the load test reached its time limit" in _one_line(run)
    _nothing_stored(store)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_server_that_dies_during_the_runs_keeps_the_runs_before_it_marked(
    cli: Any, store: Store, hostile: Behaviour, protocol: str
) -> None:
    # The curves read the statistics 8 times, the first run twice; the server dies right
    # after the second run's first reading, while that run's frames are on their way.
    hostile.die_after_stats = SWEEP_READINGS + 3
    run = _loadtest(cli, hostile, protocol, "--sessions", "1,2")
    line = _one_line(run)
    assert "stopped answering" in line and "does not give the statistics" not in line
    assert "the 1 run finished before it is kept, marked interrupted, in load test 1" in line
    (row,) = loadtests(store)
    test = load_loadtest(store, row["id"])
    assert test.interrupted and [r.sessions for r in test.runs] == [1]
    assert "stopped answering" in test.environment["stopped"]
    assert "warning: stopped early: the server at" in run.err
    assert len(_server_curves(store)) == 2  # the curves the kept run was predicted on


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_withheld_statistics_leave_a_load_test_without_what_needs_them(
    cli: Any, store: Store, hostile: Behaviour, protocol: str
) -> None:
    hostile.stats = "refused"
    run = _loadtest(cli, hostile, protocol)
    assert run.status == 0, run.err
    (row,) = loadtests(store)
    test = load_loadtest(store, row["id"])
    (only,) = test.runs
    (note,) = test.environment["runs"]
    assert note["server"] is None and "does not give its statistics" in note["statistics"]
    assert only.measured.gpu_busy_fraction is None and only.measured.frames > 0
    assert "the batch sizes run and the busy time are unavailable" in run.err
    shown = cli("loadtest", "show", str(test.id))
    assert "the server's count of it is unavailable" in shown.out
    document = cli("loadtest", "show", str(test.id), "--json").json
    Draft202012Validator(schema("loadtest show")).validate(document)
    assert document["runs"][0]["measured"]["gpu_busy_fraction"] is None


def test_a_statistics_call_that_hangs_says_how_long_it_was_given(
    cli: Any, store: Store, hostile: Behaviour
) -> None:
    hostile.stats = "hang"
    run = _loadtest(cli, hostile, "http", *LIMIT)
    assert run.status == 0, run.err
    (row,) = loadtests(store)
    (note,) = load_loadtest(store, row["id"]).environment["runs"]
    assert "no answer within 0.5 s" in note["statistics"] and "10 s" not in note["statistics"]


IMPOSSIBLE = [("falling", "went down"), ("random", "cannot be true"), ("no_size", "cannot be read")]


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize(("stats", "said"), IMPOSSIBLE)
def test_statistics_that_cannot_be_true_are_flagged_not_stored_as_figures(
    cli: Any, store: Store, hostile: Behaviour, protocol: str, stats: str, said: str
) -> None:
    hostile.stats = stats
    run = _loadtest(cli, hostile, protocol)
    assert run.status == 0, run.err
    (row,) = loadtests(store)
    test = load_loadtest(store, row["id"])
    (only,) = test.runs
    (note,) = test.environment["runs"]
    assert note["server"] is None and said in note["statistics"]
    assert only.measured.gpu_busy_fraction is None
    # The curve takes no queue time out of what the client timed.
    for curve in _server_curves(store):
        assert set(curve.environment["queue_ms"].values()) == {0.0}
        assert curve.environment["statistics"]
        medians = curve.environment["client_median_ms"]
        assert max(p.latency_ms for p in curve.points) <= max(medians.values())
    assert only.predicted.e2e_p50_ms is not None and only.predicted.e2e_p50_ms < 1000


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_header_reaches_every_call_and_its_value_is_never_shown(
    cli: Any, store: Store, db_path: Path, hostile: Behaviour, protocol: str
) -> None:
    hostile.token = "Bearer s3cret-token"
    refused = _one_line(_loadtest(cli, hostile, protocol))  # HTTP: 401, "not live"
    assert f"the server at {protocol}://127.0.0.1:" in refused and "s3cret" not in refused
    hostile.seen.clear()
    run = _loadtest(cli, hostile, protocol, "--header", "Authorization=Bearer s3cret-token",
                    "--header=X-Team=seats")  # fmt: skip
    assert run.status == 0, run.err
    assert hostile.seen and all(h.get("authorization") == hostile.token for h in hostile.seen)
    assert all(h.get("x-team") == "seats" for h in hostile.seen)
    (row,) = loadtests(store)
    command = load_loadtest(store, row["id"]).environment["command"]
    assert "Authorization=***" in command and "X-Team=***" in command
    shown = cli("loadtest", "show", str(row["id"]), "--json")
    listed = cli("loadtest", "list")
    stored = b"".join(p.read_bytes() for p in db_path.parent.glob(f"{db_path.name}*"))
    for text in (run.out, run.err, shown.out, listed.out, json.dumps(shown.json)):
        assert "s3cret" not in text and "seats" not in text
    assert b"s3cret" not in stored


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("--header", "no-equals"), "--header 'no-equals'=…: give NAME=VALUE"),
        (("--header", "Bad Name=x"), "give NAME=VALUE"),
        (("--call-timeout-s", "0"), "--call-timeout-s '0' must be above 0"),
        (("--time-limit-s", "-1"), "--time-limit-s '-1' must be above 0"),
    ],
)
def test_bad_server_options_are_refused_before_connecting(
    cli: Any, store: Store, args: tuple[str, ...], said: str
) -> None:
    run = cli("loadtest", "--target", "grpc://127.0.0.1:1", "--model", MODEL, *args)
    assert said in _one_line(run)
    _nothing_stored(store)


def test_server_options_need_a_server(cli: Any, store: Store) -> None:
    run = cli("loadtest", "--header", "A=b", "--sessions", "1")
    assert "--header go with --target" in _one_line(run)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_requests_that_hang_during_a_run_time_out_and_the_run_is_kept(
    cli: Any, store: Store, hostile: Behaviour, protocol: str
) -> None:
    # The curves take 5 inferences with QUICK; every request after them hangs.
    hostile.infer, hostile.infer_after = "hang", 5
    run = _loadtest(cli, hostile, protocol, *LIMIT)
    assert run.status == 0, run.err
    (row,) = loadtests(store)
    test = load_loadtest(store, row["id"])
    (note,) = test.environment["runs"]
    sent = note["frames"]["timed out"]
    assert sent > 0 and note["frames"]["delivered"] == 0 and note["frames"]["failed"] == 0
    assert test.runs[0].measured.frames == 0
    assert f"1 session, seed 0: 0 requests failed and {sent} timed out" in run.err
