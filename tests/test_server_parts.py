"""The parts of a server load test that need no server: reading a target, the model as a
server describes it, its statistics, the per-request estimate, the scenario predicted,
the frames as the worker's records, and the command line's refusals (these run before
anything connects)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from planner.errors import BadInput
from planner.validate.options import LoadTestOptions
from planner.validate.server.client import describe_model, parse_shape
from planner.validate.server.curves import CONCURRENT, SINGLE, Sweep, per_request_ms
from planner.validate.server.loadtest import server_options, server_scenario
from planner.validate.server.statistics import parse_statistics
from planner.validate.server.target import Target, parse_target
from planner.validate.server.traffic import ANSWERED, FAILED, NOT_SENT, TIMED_OUT, ServerRun
from planner.validate.worker.frames import DELIVERED, EXPIRED, PENDING
from planner.validate.worker.schedule import schedule

GRPC = Target("grpc", "localhost", 8001)
METADATA = {"inputs": [{"name": "x", "datatype": "FP32", "shape": ["-1", "3", "64", "64"]}]}
CONFIG = {"max_batch_size": "8", "dynamic_batching": {"max_queue_delay_microseconds": "500"},
          "instance_group": [{"count": 2}]}  # fmt: skip


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("grpc://localhost:8001", ("grpc", "localhost", 8001)),
        ("http://10.0.0.2:8000/", ("http", "10.0.0.2", 8000)),
        ("grpc://[::1]:9000", ("grpc", "::1", 9000)),
    ],
)
def test_targets_read(text: str, expected: tuple[str, str, int]) -> None:
    target = parse_target(text)
    assert (target.protocol, target.host, target.port) == expected
    assert parse_target(target.url) == target


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("localhost:8001", "the scheme must be grpc or http"),
        ("https://localhost:8001", "the scheme must be grpc or http"),
        ("grpc://localhost", "names no port"),
        ("grpc://:8001", "names no host"),
        ("grpc://localhost:99999", "is not a server address"),
        ("http://localhost:8000/v2/models", "more than a host and port"),
    ],
)
def test_bad_targets_say_what_is_expected(text: str, message: str) -> None:
    with pytest.raises(BadInput) as raised:
        parse_target(text)
    (problem,) = raised.value.problems
    assert message in problem and "grpc://HOST:PORT" in problem


def test_the_model_is_read_from_either_protocols_json() -> None:
    grpc = describe_model(GRPC, "m", METADATA, CONFIG, {"version": "2.51"})
    http_config = {"max_batch_size": 8, "dynamic_batching": {"max_queue_delay_microseconds": 500},
                   "instance_group": [{"count": 2}]}  # fmt: skip
    http_metadata = {"inputs": [{"name": "x", "datatype": "FP32", "shape": [-1, 3, 64, 64]}]}
    http = describe_model(Target("http", "localhost", 8000), "m", http_metadata, http_config, {})
    for model in (grpc, http):
        assert model.inputs[0].shape == (3, 64, 64) and model.inputs[0].datatype == "FP32"
        assert (model.max_batch_size, model.max_queue_delay_us, model.instances) == (8, 500.0, 2)


def test_an_open_shape_needs_input_shape_and_a_string_input_is_refused() -> None:
    open_shape = {"inputs": [{"name": "x", "datatype": "UINT8", "shape": ["-1", "3", "-1", "-1"]}]}
    with pytest.raises(BadInput, match="give one frame's shape with --input-shape"):
        describe_model(GRPC, "m", open_shape, CONFIG, {})
    fixed = describe_model(GRPC, "m", open_shape, CONFIG, {}, parse_shape("3,32,48"))
    assert fixed.inputs[0].shape == (3, 32, 48)
    words = {"inputs": [{"name": "t", "datatype": "BYTES", "shape": ["-1", "1"]}]}
    with pytest.raises(BadInput, match="BYTES"):
        describe_model(GRPC, "m", words, CONFIG, {})
    for bad in ("3,x", "0,4", ""):
        with pytest.raises(BadInput, match="--input-shape"):
            parse_shape(bad)


def test_a_model_without_batching_keeps_its_whole_shape_and_runs_alone() -> None:
    plain = {"inputs": [{"name": "x", "datatype": "FP32", "shape": ["3", "8", "8"]}]}
    model = describe_model(GRPC, "m", plain, {"max_batch_size": 0}, {})
    assert model.inputs[0].shape == (3, 8, 8) and model.largest_batch == 1
    options = server_options(LoadTestOptions(sessions=(1, 4)), model)
    scenario = server_scenario(options, (5.0,) * 64, 4, 0)
    assert (scenario.policy, scenario.max_batch, scenario.max_queue_delay_us) == ("triton", 1, 0.0)


def test_the_prediction_takes_the_servers_batcher() -> None:
    model = describe_model(GRPC, "m", METADATA, CONFIG, {})
    options = server_options(LoadTestOptions(sessions=(1, 2), seed=3), model)
    scenario = server_scenario(options, (5.0,) * 64, 2, 3)
    assert (scenario.policy, scenario.max_batch, scenario.max_queue_delay_us) == (
        "triton",
        8,
        500.0,
    )
    assert scenario.seed == 3 and scenario.fps == (30.0,)


def _stats(inferences: int, executions: int, batches: dict[int, int], queue_ns: int) -> Any:
    return {"model_stats": [{
        "name": "m", "version": "1", "inference_count": str(inferences),
        "execution_count": str(executions),
        "inference_stats": {"success": {"count": str(inferences), "ns": "1"},
                            "queue": {"count": str(inferences), "ns": str(queue_ns)}},
        "batch_stats": [
            {"batch_size": str(b), "compute_infer": {"count": str(n), "ns": str(n * b * 1000)}}
            for b, n in batches.items()
        ],
    }]}  # fmt: skip


def test_statistics_between_two_readings_are_what_ran_between_them() -> None:
    before = parse_statistics(_stats(10, 6, {1: 4, 3: 2}, 5_000_000), "m")
    after = parse_statistics(_stats(19, 9, {1: 5, 3: 2, 4: 2}, 8_000_000), "m")
    ran = after.since(before)
    assert (ran.frames, ran.executions, dict(ran.batches)) == (9, 3, {1: 1, 4: 2})
    assert ran.busy_ms == pytest.approx((1 * 1 + 2 * 4) * 1000 / 1e6)
    assert ran.queue_ms == pytest.approx(3_000_000 / 1e6 / 9)
    with pytest.raises(BadInput, match="nothing for 'other'"):
        parse_statistics(_stats(1, 1, {1: 1}, 0), "other")


def _sweep(way: str, latency: dict[int, float]) -> Sweep:
    found = Sweep(way)
    for b, ms in latency.items():
        found.timings[b] = [ms - 0.1, ms, ms + 0.1]
        found.queue_ms[b] = 0.5
    return found


def test_the_per_request_cost_is_the_non_negative_slope_over_the_extra_requests() -> None:
    single = _sweep(SINGLE, {1: 4.0, 2: 5.0, 4: 7.0, 8: 11.0})
    exact = _sweep(
        CONCURRENT, {b: v + 0.7 * (b - 1) for b, v in {1: 4.0, 2: 5.0, 4: 7.0, 8: 11.0}.items()}
    )
    assert per_request_ms(single, exact) == pytest.approx(0.7)
    cheaper = _sweep(CONCURRENT, {1: 4.0, 2: 4.5, 4: 6.0, 8: 9.0})
    assert per_request_ms(single, cheaper) == 0.0
    # Least squares: gaps 1 at b=2 and 3 at b=4 fit 11/10 per request, not their mean.
    mixed = _sweep(CONCURRENT, {1: 4.0, 2: 6.0, 4: 10.0})
    assert per_request_ms(single, mixed) == pytest.approx((1 * 1 + 3 * 3) / (1 + 9))
    assert per_request_ms(_sweep(SINGLE, {1: 4.0}), _sweep(CONCURRENT, {1: 9.0})) == 0.0


def test_frames_sent_to_a_server_become_the_workers_records() -> None:
    scenario = server_scenario(LoadTestOptions(sessions=(2,), duration_s=0.2), (5.0,) * 64, 2, 0)
    plan = schedule(scenario)
    n = plan.frames
    status = np.full(n, ANSWERED, np.int8)
    status[:3] = (FAILED, TIMED_OUT, NOT_SENT)
    sent = plan.arrival_ms + 0.25
    sent[2] = np.nan
    done = sent + 6.0
    run = ServerRun(scenario, plan.session, plan.frame, plan.capture_ms, plan.arrival_ms,
                    sent, done, status)  # fmt: skip
    worker = run.worker_run()
    # Answers after the end of the run are frames the server still held then (pending),
    # as the simulator counts a queue left at the end; the server's own counts keep them.
    late = int(np.sum((status == ANSWERED) & (done > scenario.duration_ms)))
    assert late > 0
    assert worker.count(DELIVERED) == n - 3 - late and worker.count(EXPIRED) == 2
    assert worker.count(PENDING) == 1 + late
    assert np.allclose(run.lateness_ms, 0.25) and run.lateness_ms.size == n - 1
    answered = (status == ANSWERED) & (done <= scenario.duration_ms)
    assert np.allclose(worker.batch_end_ms[answered] - worker.ready_ms[answered], 6.0)
    counts = {"pending": 1, "delivered": n - 3, "failed": 1, "timed out": 1, "after the end": late}
    assert run.counts() == counts


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--camera", "640x480"), "--camera does not apply to --target"),
        (("--max-batch", "4"), "read from the model's config"),
        (("--policies", "batch-all"), "predicts with triton"),
        (("--rounds", "3"), "--rounds does not apply to --target"),
        (("--input-shape", "3,a"), "--input-shape '3,a' is not a shape"),
    ],
)
def test_options_that_do_not_apply_to_a_server_are_refused_before_connecting(
    cli: Any, args: tuple[str, ...], message: str
) -> None:
    run = cli("loadtest", "--target", "grpc://127.0.0.1:1", "--model", "m", *args)
    assert run.status == 2 and message in run.err
    assert "cannot reach" not in run.err


def test_a_target_needs_a_model(cli: Any) -> None:
    run = cli("loadtest", "--target", "grpc://127.0.0.1:1")
    assert run.status == 2 and "--target needs --model NAME" in run.err


def test_without_tritonclient_the_error_names_the_extra(
    cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import importlib

    real = importlib.import_module

    def missing(name: str, *args: Any) -> Any:
        if name.startswith("tritonclient"):
            raise ModuleNotFoundError(f"No module named {name!r}")
        return real(name, *args)

    monkeypatch.setattr(importlib, "import_module", missing)
    run = cli("loadtest", "--target", "http://127.0.0.1:1", "--model", "m")
    lines = run.err.strip().splitlines()
    assert run.status == 2 and len(lines) == 1
    assert "pip install -e '.[server]' in the planner's checkout" in lines[0]


def test_what_a_server_counts_is_checked_against_what_the_client_saw() -> None:
    from planner.validate.server.statistics import Statistics

    fine = Statistics(frames=10, executions=4, batches={1: 2, 4: 2}, compute_ns={1: 1, 4: 1})
    assert fine.impossible(answered=10, duration_ms=100.0) is None
    assert fine.impossible(answered=9) is None  # others' traffic may add frames
    cases = {
        "went down": Statistics(frames=-5),
        "it counts 3 frames where it answered 10": Statistics(frames=3, executions=3),
        "executions of": Statistics(frames=10, executions=11),
        "do not add up": Statistics(frames=10, executions=2, batches={4: 2}),
        "busy": Statistics(frames=10, executions=1, batches={10: 1}, compute_ns={10: 10**9}),
    }
    for said, stats in cases.items():
        problem = stats.impossible(answered=10, duration_ms=100.0)
        assert problem is not None and said in problem, (said, problem)
    # Two model instances may be busy twice the run.
    two = Statistics(frames=10, executions=1, batches={10: 1}, compute_ns={10: 190_000_000})
    assert two.impossible(10, 100.0, instances=2) is None
    assert two.impossible(10, 100.0, instances=1) is not None


@pytest.mark.parametrize(
    ("document", "said"),
    [
        ({"model_stats": [{"name": "m", "batch_stats": [{"compute_infer": {}}]}]}, "batch size"),
        ({"model_stats": [{"name": "m", "inference_count": "lots"}]}, "is not a count"),
        ({"model_stats": [{"name": "m", "inference_count": 1.5}]}, "is not a count"),
        ({"model_stats": "nothing"}, "hold nothing for 'm'"),
        ({"model_stats": [[1, 2]]}, "hold nothing for 'm'"),
    ],
)
def test_statistics_that_cannot_be_read_are_refused_in_one_line(document: Any, said: str) -> None:
    from planner.validate.server.statistics import Unreadable

    with pytest.raises(Unreadable) as raised:
        parse_statistics(document, "m")
    (problem,) = raised.value.problems
    assert said in problem


def test_an_answer_is_checked_against_the_models_outputs() -> None:
    from planner.validate.server.client import answer_problem

    metadata = {**METADATA, "outputs": [{"name": "y", "datatype": "FP32", "shape": ["-1", "2"]}]}
    model = describe_model(GRPC, "m", metadata, CONFIG, {})
    assert answer_problem(model, {"y": (4, 2)}, 4) is None
    assert "has the shape [4, 3] for 4 frames" in str(answer_problem(model, {"y": (4, 3)}, 4))
    assert "has the shape [3, 2] for 4 frames" in str(answer_problem(model, {"y": (3, 2)}, 4))
    assert "lacks the output 'y'" in str(answer_problem(model, {"z": (4, 2)}, 4))
    assert "no outputs that can be read" in str(answer_problem(model, None, 4))


@pytest.mark.parametrize(
    ("metadata", "config", "said"),
    [
        ([1, 2], CONFIG, "its metadata is not a document"),
        ({"inputs": [{"name": "x", "shape": [-1]}]}, CONFIG, "input 'x' has no datatype"),
        ({"inputs": [{"datatype": "FP32"}]}, CONFIG, "has no name"),
        ({"inputs": "x"}, CONFIG, "its inputs are not a list"),
        (METADATA, {"max_batch_size": "lots"}, "max_batch_size 'lots' is not a number"),
        (METADATA, {"max_batch_size": -3}, "below 0"),
        (METADATA, "config", "its config is not a document"),
        ({"inputs": [{"name": "x", "datatype": "FP32", "shape": [-1, "a"]}]}, CONFIG,
         "is not a number"),
        ({"inputs": [{"name": "x", "datatype": "COMPLEX", "shape": [-1, 3]}]}, CONFIG,
         "is COMPLEX; a load test sends numeric tensors only"),
        ({"inputs": [{"name": "x", "datatype": "FP32", "shape": [-1, 1e5, 1e5, 1e5]}]}, CONFIG,
         "MiB, above the 256 MiB a load test sends"),
    ],
)  # fmt: skip
def test_a_model_described_in_a_way_that_cannot_be_used_is_one_line(
    metadata: Any, config: Any, said: str
) -> None:
    with pytest.raises(BadInput) as raised:
        describe_model(GRPC, "m", metadata, config, {})
    (problem,) = raised.value.problems
    assert said in problem and len(problem) < 300


def test_headers_are_read_and_their_values_never_shown() -> None:
    from planner.validate.options import shown_command
    from planner.validate.server.client import parse_header

    assert parse_header("Authorization=Bearer a=b") == ("authorization", "Bearer a=b")
    for bad, said in (
        ("novalue", "give NAME=VALUE"),
        ("=x", "give NAME=VALUE"),
        ("two words=x", "give NAME=VALUE"),
        ("x=se\ncret", "must be one line"),
    ):
        with pytest.raises(BadInput) as raised:
            parse_header(bad)
        assert said in str(raised.value) and "cret" not in str(raised.value)
    command = shown_command(["loadtest", "--header", "A=secret", "--header=B=c=d", "--model", "m"])
    assert command == "planner loadtest --header 'A=***' '--header=B=***' --model m"
