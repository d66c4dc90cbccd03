"""A scheduling policy is one entry in one registry: a policy defined here, and nowhere
else, runs through both engines, a server that queues every frame, the recommendation and
the command line, with an id the registry gives it."""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np
import pytest

from planner.curves.curve import Point
from planner.curves.fit import fit_curve
from planner.errors import BadInput
from planner.plan.recommend import recommend
from planner.plan.request import Request
from planner.sim.engine_fast import run_fast
from planner.sim.engine_reference import run_reference
from planner.sim.jit import jit
from planner.sim.params import LIMIT
from planner.sim.pending import oldest, take_oldest
from planner.sim.policies import POLICIES, Policy, decide, register, unregister
from planner.sim.scenario import Scenario

LAPTOP = "1:9.82,2:20.36,3:32.71,4:46.15,8:103.77,16:221.25"
POINTS = [Point(int(b), float(v)) for b, v in (p.split(":") for p in LAPTOP.split(","))]
TABLE = tuple(6.0 + 9.0 * b for b in range(12))
BUILT_IN = list(POLICIES)


# -- the toy policy: up to two frames at a time, the oldest ---------------------------------


@jit()
def _pairs(now, pending, latency, params, state, feedback, chosen, expired):
    _, slots = pending
    count = take_oldest(slots, oldest(slots), int(min(2.0, params[LIMIT])), chosen)
    return count, math.inf, 0


@jit()
def _pairs_queued(now, waiting, first_ready, slots, latency, params, bound, state, feedback):
    return min(waiting, int(min(2.0, params[LIMIT]))), math.inf, math.inf, -1, state


def _pairs_reference(t, queue, latency, params, sessions, state, feedback):
    return queue[: int(min(2.0, params[LIMIT]))], math.inf, []


PAIRS = Policy(
    "pairs",
    "up to two pending frames, oldest first (a test's toy policy)",
    _pairs,
    _pairs_queued,
    _pairs_reference,
)


@pytest.fixture
def pairs() -> Iterator[Policy]:
    entry = register(PAIRS)
    try:
        yield entry
    finally:
        unregister(entry.name)


def _loaded(policy: str, **changes: object) -> Scenario:
    """A card loaded enough that every policy batches as far as it may."""
    return Scenario(latency_ms=TABLE, sessions=8, policy=policy, duration_s=2.0, seed=3,
                    **changes)  # type: ignore[arg-type]  # fmt: skip


# -- ids ---------------------------------------------------------------------------------


def test_a_registered_policy_gets_the_next_id_and_unregistering_renumbers() -> None:
    entry = register(PAIRS)
    try:
        assert entry.pid == len(BUILT_IN)
        assert POLICIES["pairs"] == entry
        with pytest.raises(ValueError, match="registered already"):
            register(PAIRS)
    finally:
        unregister("pairs")
    assert list(POLICIES) == BUILT_IN
    assert [p.pid for p in POLICIES.values()] == list(range(len(BUILT_IN)))

    first = POLICIES[BUILT_IN[0]]
    unregister(first.name)
    try:
        assert [p.pid for p in POLICIES.values()] == list(range(len(BUILT_IN) - 1))
        # The switches follow: the second policy, now id 0, runs its own kernel, one frame
        # from the next session in turn (round-robin), not the oldest frame.
        second = POLICIES[BUILT_IN[1]]
        assert (second.pid, second.name) == (0, "round-robin")
        pending = np.array([5.0, math.inf, 1.0, 3.0])
        chosen, expired = np.zeros(4, np.int64), np.zeros(4, np.bool_)
        state = np.array([3.0, 0.0, 0.0, 0.0])  # the last session served: 2
        count, _ = decide(0, 6.0, pending, np.r_[0.0, TABLE], np.array([0.0, 0.0, 0.0, 8.0]),
                          state, math.nan, chosen, expired)  # fmt: skip
        assert chosen[:count].tolist() == [3]
    finally:
        register(first)
        # back in the built-in order, so the rest of the session sees the registry as it was
        for name in BUILT_IN[1:]:
            entry = POLICIES[name]
            unregister(name)
            register(entry)
    assert list(POLICIES) == BUILT_IN


# -- the engines ---------------------------------------------------------------------------


def test_the_toy_policy_decides_through_decide(pairs: Policy) -> None:
    pending = np.array([5.0, math.inf, 1.0, 3.0])
    chosen, expired = np.zeros(4, np.int64), np.zeros(4, np.bool_)
    latency = np.r_[0.0, TABLE]
    params = np.array([0.0, 0.0, 0.0, math.inf])
    count, wake = decide(pairs.pid, 6.0, pending, latency, params, np.zeros(4), math.nan,
                         chosen, expired)  # fmt: skip
    assert chosen[:count].tolist() == [2, 3]  # the two oldest
    assert wake == math.inf
    assert not expired.any()


@pytest.mark.parametrize("queue", ["newest", "all"])
def test_the_toy_policy_runs_the_same_on_both_engines(pairs: Policy, queue: str) -> None:
    scenario = _loaded("pairs", queue=queue)
    fast, reference = run_fast(scenario), run_reference(scenario)
    assert fast.same_as(reference) == []
    # Its own decisions: never more than two frames, and pairs under load.
    assert fast.batch_size.max() == 2
    assert np.mean(fast.batch_size == 2) > 0.9
    # ... which no built-in policy makes of the same scenario
    for name in BUILT_IN:
        other = run_fast(_loaded(name, queue=queue))
        assert other.batch_size.tolist() != fast.batch_size.tolist(), name


def test_the_toy_policy_is_recommended_like_any_other(pairs: Policy) -> None:
    request = Request(curve=fit_curve(POINTS), policies=("oldest-first", "pairs"), seeds=2,
                      duration_s=5.0, max_sessions=8)  # fmt: skip
    result = recommend(request)
    by_policy = {o.policy: o for o in result.options}
    assert set(by_policy) == {"oldest-first", "pairs"}
    # Two frames per batch cost less than two batches of one (the curve is sub-linear at
    # 2), so pairs hold at least as many seats.
    assert by_policy["pairs"].cap >= by_policy["oldest-first"].cap >= 1


def test_the_toy_policy_reaches_the_command_line(pairs: Policy, cli) -> None:
    base = ("simulate", "--points", LAPTOP, "--sessions", "8", "--duration-s", "2", "--json")
    for queue in ("newest", "all"):
        run = cli(*base, "--policy", "pairs", "--queue", queue)
        assert run.status == 0, run.err
        assert run.json["policy"] == "pairs"
    planned = cli("recommend", "--points", LAPTOP, "--policies", "pairs", "--seeds", "2",
                  "--max-sessions", "6", "--json")  # fmt: skip
    assert planned.status == 0, planned.err
    assert {o["policy"] for o in planned.json["options"]} == {"pairs"}


def test_an_unregistered_policy_is_refused(cli) -> None:
    assert "pairs" not in POLICIES
    with pytest.raises(BadInput, match="pairs"):
        Scenario(latency_ms=TABLE, sessions=2, policy="pairs")
    run = cli("simulate", "--points", LAPTOP, "--sessions", "2", "--policy", "pairs")
    assert run.status != 0
