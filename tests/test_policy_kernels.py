"""The policy kernels against plain Python selections written from SPEC §3.3.

Both engines call the same compiled kernels, so the engines' differential test cannot
catch a mistake inside one; these tests check the kernels' choices on their own, on the
pending set built from a time per session, as ``decide`` builds it.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planner.sim.arrivals import arrivals
from planner.sim.engine_fast import run_fast, run_prepared
from planner.sim.engine_reference import run_reference
from planner.sim.pending import of_times
from planner.sim.policies import POLICIES, _deadline, _take_oldest, decide
from planner.sim.scenario import Scenario

arrival_times = st.lists(
    st.one_of(st.just(math.inf), st.sampled_from([0.0, 1.0, 2.5, 2.5, 7.0]), st.floats(0, 100)),
    min_size=1,
    max_size=24,
)


def oldest(pending: list[float], limit: int) -> list[int]:
    """Sessions with a pending frame, earliest arrival first, ties to the lower index."""
    waiting = sorted((t, i) for i, t in enumerate(pending) if t < math.inf)
    return [i for _, i in waiting[:limit]]


@settings(max_examples=300, deadline=None)
@given(arrival_times, st.integers(1, 30))
def test_take_oldest_picks_the_oldest_frames_ties_to_the_lower_session(
    pending: list[float], limit: int
) -> None:
    chosen = np.zeros(len(pending), np.int64)
    count = _take_oldest(of_times(np.array(pending)).slots, limit, chosen)
    assert chosen[:count].tolist() == oldest(pending, limit)


@settings(max_examples=300, deadline=None)
@given(
    arrival_times,
    st.floats(0, 120),
    st.floats(1, 80),
    st.lists(st.floats(0.1, 20), min_size=24, max_size=24),
)
def test_deadline_expires_and_batches_as_specified(
    pending: list[float], now: float, slo: float, steps: list[float]
) -> None:
    now = max(now, max((t for t in pending if t < math.inf), default=0.0))
    latency = np.r_[0.0, np.cumsum(steps)]  # latency[b], rising
    expired_expected = [
        i for i, t in enumerate(pending) if t < math.inf and now + latency[1] > t + slo
    ]
    live = [math.inf if i in expired_expected else t for i, t in enumerate(pending)]
    order = oldest(live, len(live))
    size = 0
    for k in range(len(order), 0, -1):  # the largest oldest-first batch meeting every deadline
        if all(now + latency[k] <= live[i] + slo for i in order[:k]):
            size = k
            break
    chosen = np.zeros(len(pending), np.int64)
    expired = np.zeros(len(pending), np.int64)
    params = np.array([0.0, 0.0, slo, math.inf])
    count, wake, gone = _deadline(now, of_times(np.array(pending)), latency, params,
                                  np.zeros(4), math.nan, chosen, expired)  # fmt: skip
    assert sorted(expired[:gone].tolist()) == expired_expected
    assert chosen[:count].tolist() == order[:size]
    assert wake == math.inf


# -- the switch: every registered policy runs its own kernel --------------------------------


def _decision_inputs(rng: np.random.Generator) -> tuple[object, ...]:
    """Random decision inputs: pending frames, a rising latency table, parameters and
    state, so that different kernels give different answers on many of them."""
    n = int(rng.integers(1, 9))
    pending = np.where(rng.random(n) < 0.7, rng.uniform(0, 40, n), math.inf)
    latency = np.r_[0.0, np.cumsum(rng.uniform(1, 15, n + 1))]
    limit = math.inf if rng.random() < 0.5 else float(rng.integers(1, n + 1))
    params = np.array([float(rng.integers(1, 6)), rng.uniform(0, 20), rng.uniform(5, 60), limit])
    state = np.array([float(rng.integers(0, n + 1)), float(rng.integers(0, n + 1)), 0.0, 0.0])
    feedback = math.nan if rng.random() < 0.3 else rng.uniform(0, 80)
    now = float(rng.uniform(0, 60))
    return now, pending, latency, params, state, feedback


def _on_array(kernel: Any) -> Any:
    """A kernel called the way ``decide`` calls it: on the set of the pending frames given
    as a time per session, with the sessions whose frame expired marked in booleans."""

    def run(now, pending, latency, params, state, feedback, chosen, expired):  # type: ignore[no-untyped-def]
        lapsed = np.zeros(pending.size, np.int64)
        count, wake, gone = kernel(now, of_times(pending), latency, params, state, feedback,
                                   chosen, lapsed)  # fmt: skip
        expired[lapsed[:gone]] = True
        return count, wake

    return run


def _answer(run: Any, inputs: tuple[object, ...]) -> tuple[object, ...]:
    now, pending, latency, params, state, feedback = inputs
    pending, state = np.array(pending), np.array(state)  # kernels may write to these
    n = pending.size
    chosen, expired = np.zeros(n, np.int64), np.zeros(n, np.bool_)
    count, wake = run(now, pending, latency, params, state, feedback, chosen, expired)
    return count, wake, chosen[:count].tolist(), expired.tolist(), state.tolist()


def test_each_policy_id_runs_that_policys_own_kernel() -> None:
    rng = np.random.default_rng(7)
    cases = [_decision_inputs(rng) for _ in range(300)]
    answers = {}
    for policy in POLICIES.values():
        via_switch = [
            _answer(lambda *a, pid=policy.pid: decide(pid, *a), inputs) for inputs in cases
        ]
        own = [_answer(_on_array(policy.kernel), inputs) for inputs in cases]
        assert via_switch == own, policy.name
        answers[policy.name] = own
    # The cases tell every pair of kernels apart, so a branch that ran another policy's
    # kernel would have failed above.
    names = list(answers)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            assert answers[a] != answers[b], (a, b)


def test_policy_ids_are_registry_positions() -> None:
    assert [p.pid for p in POLICIES.values()] == list(range(len(POLICIES)))


def test_an_unknown_policy_id_fails_instead_of_running_another_policy() -> None:
    now, pending, latency, params, state, feedback = _decision_inputs(np.random.default_rng(1))
    n = np.asarray(pending).size
    with pytest.raises(ValueError, match="unknown policy"):
        decide(len(POLICIES), now, pending, latency, params, state, feedback,
               np.zeros(n, np.int64), np.zeros(n, np.bool_))  # fmt: skip
    scenario = Scenario(latency_ms=tuple(float(b) for b in range(1, 5)), sessions=3)
    table = np.r_[0.0, scenario.latency_ms]
    arrived = arrivals(scenario)
    with pytest.raises(ValueError, match="unknown policy"):
        run_prepared(arrived.times, arrived.start, scenario.duration_ms, table, len(POLICIES),
                     scenario.policy_params())  # fmt: skip


def test_the_fast_engines_switch_runs_each_policys_own_kernel() -> None:
    # A loaded card with a wide curve and a short objective, where every policy batches
    # (or drops) differently, so a branch running another policy's kernel shows.
    base = Scenario(
        latency_ms=tuple(6.0 + 9.0 * b for b in range(12)),
        sessions=12,
        duration_s=2.0,
        max_batch=3,
        max_queue_delay_us=4000,
        slo_ms=40.0,
    )
    runs = {}
    for policy in POLICIES:
        scenario = base.with_(policy=policy, max_batch=3, max_queue_delay_us=4000, slo_ms=40.0)
        fast, reference = run_fast(scenario), run_reference(scenario)
        assert fast.same_as(reference) == [], policy
        runs[policy] = (fast.batch_size.tolist(), fast.frame_session.tolist())
    names = list(runs)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            assert runs[a] != runs[b], (a, b)
