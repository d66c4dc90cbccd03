"""A server that queues every frame (``Scenario.queue == "all"``): the fast engine against
the reference engine, queueing theory, the queue policy's bound and timeout, and what the
command line says when the queue grows."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

from planner.cli import main
from planner.errors import BadInput
from planner.plan.params import SimulateParams
from planner.sim.arrivals import arrivals
from planner.sim.engine_fast import run_fast
from planner.sim.engine_reference import run_reference
from planner.sim.policies import POLICIES
from planner.sim.results import summarise
from planner.sim.scenario import Scenario
from planner.sim.sharing import Sharing
from planner.sim.stages import WorkerStages


def _case(rng: random.Random) -> Scenario:
    n = rng.choice([1, 2, 3, 4, 6, 9])
    policy = rng.choice(list(POLICIES))
    max_batch = rng.choice([None, 2, 8, 12])
    size = max(n, max_batch or 8) + rng.randint(0, 3)
    a, c = rng.uniform(1, 10), rng.uniform(0.2, 4)
    kw: dict = dict(
        latency_ms=tuple(a + c * b for b in range(1, size + 1)),
        sessions=n,
        policy=policy,
        duration_s=rng.choice([0.5, 1.0, 2.0]),
        seed=rng.randint(0, 99),
        queue="all",
        fps=(rng.choice([30.0, 60.0, 120.0]),),
    )
    if policy in ("triton", "max-batch") and max_batch:
        kw["max_batch"] = max_batch
    if rng.random() < 0.3:
        kw["max_queue_size"] = rng.randint(1, 20)
    if rng.random() < 0.4:
        kw["queue_timeout_us"] = rng.choice([5000.0, 20000.0, 60000.0])
        kw["timeout_action"] = rng.choice(["reject", "delay"])
    if rng.random() < 0.3:
        kw["sharing"] = Sharing.of("time-slicing", cotenants=(0.5,))
    if rng.random() < 0.3:
        kw["stages"] = WorkerStages(network_ms=1.0, pre_ms=2.0, post_ms=1.5)
    if rng.random() < 0.2:
        kw["memory_batch_limit"] = rng.randint(1, 6)
    if rng.random() < 0.2:
        kw["phases"] = "aligned"
    if rng.random() < 0.2:
        kw["jitter_ms"] = 3.0
    if rng.random() < 0.3:
        kw["spread"] = tuple(rng.uniform(0.0, 0.4) for _ in range(size))  # batch-time spread
    return Scenario(**kw)


@pytest.mark.parametrize("seed", range(6))
def test_the_fast_engine_matches_the_reference_engine(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(25):
        scenario = _case(rng)
        problems = run_fast(scenario).same_as(run_reference(scenario))
        assert problems == [], (scenario, problems[:3])


@pytest.mark.parametrize("policy", list(POLICIES))
def test_every_policy_past_saturation_matches_and_keeps_every_frame(policy: str) -> None:
    scenario = Scenario(
        latency_ms=tuple(5.0 + 2.0 * b for b in range(1, 13)), sessions=12, policy=policy,
        duration_s=3.0, queue="all",
    )  # fmt: skip
    fast = run_fast(scenario)
    assert fast.same_as(run_reference(scenario)) == []
    assert fast.overwritten.sum() == 0
    accounted = fast.delivered + fast.expired + fast.pending
    assert np.array_equal(accounted, fast.arrived)


def test_an_under_loaded_queue_waits_no_longer_than_m_d_1() -> None:
    """One frame at a time is a FIFO queue with a deterministic service: each frame's wait
    follows Lindley's recursion on the frames' times, and periodic sessions with random
    phases wait less than Poisson arrivals would: at 50% load the mean wait is above 0 and
    below M/D/1's rho * D / (2 (1 - rho))."""
    rho = 0.5
    service = rho * 1000.0 / (30.0 * 20)  # 20 sessions at 30 fps
    waits = []
    for seed in range(8):
        scenario = Scenario(
            latency_ms=(service,) * 20, sessions=20, policy="oldest-first", duration_s=20.0,
            seed=seed, queue="all",
        )  # fmt: skip
        records = run_fast(scenario)
        wait = records.batch_start[records.frame_batch] - records.frame_ready
        times = np.sort(arrivals(scenario).times)
        lindley = np.zeros(times.size)
        for k in range(1, times.size):
            lindley[k] = max(0.0, lindley[k - 1] + service - (times[k] - times[k - 1]))
        assert wait == pytest.approx(lindley[: wait.size], abs=1e-9)  # delivered in order
        waits.append(wait)
    mean = float(np.concatenate(waits).mean())
    assert 0.0 < mean < rho * service / (2 * (1 - rho))


def test_a_saturated_queue_grows_linearly() -> None:
    """Arrivals at 1.25 times the service rate: a frame captured at t waits about
    (rho - 1) t, and the frames still queued at the end are about (lambda - mu) T."""
    service = 1.25 * 1000.0 / (30.0 * 8)  # 8 sessions at 30 fps, one frame at a time
    scenario = Scenario(
        latency_ms=(service,) * 8, sessions=8, policy="oldest-first", duration_s=30.0,
        queue="all",
    )  # fmt: skip
    records = run_fast(scenario)
    capture = records.frame_ready
    late = capture > 10_000
    slope = np.polyfit(capture[late], records.frame_latency[late], 1)[0]
    assert slope == pytest.approx(0.25, rel=0.05)
    arrived_rate, served_rate = 8 * 30.0, 1000.0 / service
    expected_queued = (arrived_rate - served_rate) * 30.0
    assert records.pending.sum() == pytest.approx(expected_queued, rel=0.05)
    growth = summarise(scenario, records).queue
    assert growth is not None and growth.grows


def test_the_queue_bound_rejects_and_caps_the_wait() -> None:
    scenario = Scenario(
        latency_ms=(10.0,) * 8, sessions=8, policy="oldest-first", duration_s=10.0,
        queue="all", max_queue_size=5,
    )  # fmt: skip
    records = run_fast(scenario)
    assert records.expired.sum() > 0
    # At most 5 wait, and one runs: no frame waits more than 6 batches.
    assert records.frame_latency.max() <= 6 * 10.0 + 1e-9


@pytest.mark.parametrize("action", ["reject", "delay"])
def test_the_timeout(action: str) -> None:
    scenario = Scenario(
        latency_ms=(10.0,) * 8, sessions=8, policy="oldest-first", duration_s=10.0,
        queue="all", queue_timeout_us=50_000.0, timeout_action=action,
    )  # fmt: skip
    records = run_fast(scenario)
    waited = records.batch_start[records.frame_batch] - records.frame_ready
    if action == "reject":
        assert records.expired.sum() > 0
        assert waited.max() < 50.0
    else:
        # Delayed, not dropped: past saturation those wait behind every newer request,
        # to the end of the run.
        assert records.expired.sum() == 0
        assert records.pending.sum() == records.arrived.sum() - records.delivered.sum() > 0


def test_newest_is_the_default_and_drops_the_queue_settings() -> None:
    s = Scenario(latency_ms=(1.0, 2.0), sessions=2, max_queue_size=3, queue_timeout_us=5.0)
    assert (s.queue, s.max_queue_size, s.queue_timeout_us) == ("newest", None, None)


def test_bad_queue_settings_are_refused_with_reasons() -> None:
    with pytest.raises(BadInput) as caught:
        Scenario(latency_ms=(1.0,) * 4, sessions=4, policy="triton", queue="all")
    assert "a batch of 8 (max_batch)" in str(caught.value)
    with pytest.raises(BadInput) as caught:
        Scenario(
            latency_ms=(1.0,) * 4, sessions=2, queue="all",
            stages=WorkerStages(pre_ms=1.0, cpu_workers=2),
        )  # fmt: skip
    assert "unlimited CPU threads" in str(caught.value)
    with pytest.raises(BadInput):
        Scenario(latency_ms=(1.0,), sessions=1, queue="some")  # type: ignore[arg-type]


def test_simulate_past_saturation_shows_latency_growing(capsys: pytest.CaptureFixture) -> None:
    argv = ["simulate", "--points", "1:10,8:30", "--sessions", "12", "--policy", "triton",
            "--queue", "all", "--duration-s", "9"]  # fmt: skip
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "the queue grows" in out and "frames still queued at the end" in out
    assert main([*argv, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    growth = doc["queue_growth"]
    assert growth["p99_last_third_ms"] > growth["p99_first_third_ms"]
    assert growth["queued_at_end"] > 0
    assert doc["queue"] == "all"


def test_queue_settings_without_queue_all_are_one_line(capsys: pytest.CaptureFixture) -> None:
    code = main(["simulate", "--points", "1:10,8:30", "--sessions", "2",
                 "--max-queue-size", "4"])  # fmt: skip
    assert code == 2
    err = capsys.readouterr().err
    assert "--max-queue-size applies to --queue all only; the queue is newest" in err
    assert len(err.strip().splitlines()) == 1


def test_a_recommendation_says_the_queue_grows(capsys: pytest.CaptureFixture) -> None:
    # An always-busy co-tenant halves the card's speed, which the latency table (and so
    # the stability condition, planner.plan.stability) does not hold: the runs see the
    # queue grow before the condition does.
    argv = ["recommend", "--points", "1:10,8:30", "--policies", "triton", "--queue", "all",
            "--modes", "time-slicing", "--cotenants", "1",
            "--seeds", "2", "--duration-s", "9", "--json"]  # fmt: skip
    assert main(argv) == 0
    doc = json.loads(capsys.readouterr().out)
    text = json.dumps(doc)
    assert "the queue grows: the p99 latency reaches" in text
    newest = json.loads(_run(capsys, [a for a in argv if a not in ("--queue", "all")]))
    assert "queue grows" not in json.dumps(newest)


def _run(capsys: pytest.CaptureFixture, argv: list[str]) -> str:
    assert main(argv) == 0
    return capsys.readouterr().out


@pytest.mark.parametrize(
    ("flag", "value"), [("--queue-timeout-us", "0"), ("--max-queue-size", "0")]
)
def test_a_bad_queue_setting_under_queue_all_is_one_line(
    capsys: pytest.CaptureFixture, flag: str, value: str
) -> None:
    code = main(["simulate", "--points", "1:10,8:30", "--sessions", "2", "--policy", "triton",
                 "--queue", "all", flag, value])  # fmt: skip
    assert code == 2
    err = capsys.readouterr().err
    assert err.startswith(f"planner: {flag}: must be")
    assert "queue all only" not in err and len(err.strip().splitlines()) == 1


def test_a_link_says_which_queue_its_settings_met() -> None:
    from planner.links.urls import decode

    _, ignored = decode(SimulateParams, {"queue": "fifo", "max_queue_size": "5"})
    assert ignored[-1] == (
        "ignored max_queue_size: max_queue_size applies to queue=all only; the queue is newest"
    )
    _, ignored = decode(SimulateParams, {"queue": "all", "max_queue_size": "0"})
    assert len(ignored) == 1 and "queue=all only" not in ignored[0]


def test_a_run_whose_every_frame_timed_out_claims_no_verdict(
    capsys: pytest.CaptureFixture,
) -> None:
    code = main(["simulate", "--points", "1:10,8:30", "--sessions", "20", "--policy", "triton",
                 "--queue", "all", "--queue-timeout-us", "1", "--duration-s", "2"])  # fmt: skip
    assert code == 0
    out = capsys.readouterr().out
    assert "the queue keeps up" not in out and "the queue grows" not in out
    assert "too few frames delivered to tell whether it keeps up" in out
    assert "batches (size x count): none ran" in out
