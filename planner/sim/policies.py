"""Scheduling policies: which pending frames go into the next batch (SPEC §3.3).

A policy is one small function with one signature, compiled with Numba so the fast
engine can call it in its inner loop; the reference engine and the reference worker call
the same compiled functions through ``decide``. (So the differential test checks the
engines, not the policies: the policies are checked by hand-worked traces and by tests
against plain Python selections.) At each decision the GPU is free and the engine passes:

- ``now``: the decision time (ms);
- ``pending``: the pending frames (the newest of each session that has one), with the
  time each became pending, as a ``planner.sim.pending.Pending`` set: it finds the oldest
  frames, the next session in turn, or all of them in session order without looking at
  every session, so a decision costs the same at 16 sessions as at 1,024. Kernels read
  it and leave it as it is (they may move its head past dead entries); the engine
  removes the frames that were taken or expired;
- ``latency``: ``latency[b]`` = the latency of a batch of ``b`` frames as the scheduler
  knows it (index 0 unused);
- ``params``: ``[max_batch, max_queue_delay_ms, slo_ms, batch_limit]`` (each policy reads
  its own; ``batch_limit``, the largest batch that fits in memory, caps every policy's
  batch, and is +inf when memory does not limit);
- ``state``: the policy's memory between decisions (``STATE_SIZE`` floats, zeroed by
  ``initial_state``); ``feedback``: the worst GPU-side latency of the batch that completed
  since the previous decision, or NaN;
- ``chosen`` / ``expired``: output buffers of sessions, one slot per session.

It returns ``(count, wake, gone)``: run the sessions ``chosen[:count]`` as one batch; or,
with ``count == 0``, run nothing and decide again at ``wake`` (+inf: at the next
arrival). The sessions ``expired[:gone]`` drop their pending frame as expired.
``decide`` runs a kernel on pending frames given as an array of one time per session.

Adding a policy: write its kernel, add a ``Policy`` entry to ``_REGISTRY``, and give its
id (its position in the registry) a branch in ``decide`` here and in the fast engine's
switch (``planner.sim.engine_fast.decision_loop``, which spells the switch out for speed:
see there).
An id without a branch raises instead of running another policy, and the tests run every
registered policy through both switches and check that its own kernel answered. The
dashboard and the command line list ``POLICIES``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from planner.sim.jit import jit
from planner.sim.pending import (
    at_end,
    in_session_order,
    live_from,
    next_from,
    of_times,
    oldest,
    session_at,
    size,
    take_oldest,
)

STATE_SIZE = 4
LIMIT = 3
"""Position of the batch limit (the largest batch that fits in memory) in ``params``."""
_NO_WAKE = math.inf


@dataclass(frozen=True)
class Policy:
    """A policy's name (part of the interface), what it does, its parameters, its kernel,
    and its id: its position in the registry, which ``decide`` switches on.
    ``one_at_a_time`` says its batches always hold one frame (so no memory limit binds)."""

    name: str
    summary: str
    kernel: Callable[..., Any] = field(repr=False, compare=False)
    params: tuple[str, ...] = ()
    defaults: Mapping[str, float] = field(default_factory=dict)
    pid: int = -1
    one_at_a_time: bool = False


# -- kernels -----------------------------------------------------------------------------
# Every kernel has the signature described in the module docstring. Ties in arrival time
# are broken by the lower session index (the pending set keeps frames in that order).
# Kernels allocate nothing and look only at the frames they take or skip: they run at
# every decision of every simulation.


@jit()
def _oldest_first(now, pending, latency, params, state, feedback, chosen, expired):  # type: ignore[no-untyped-def]
    position = oldest(pending)
    if at_end(pending, position):
        return 0, _NO_WAKE, 0
    chosen[0] = session_at(pending, position)
    return 1, _NO_WAKE, 0


@jit()
def _round_robin(now, pending, latency, params, state, feedback, chosen, expired):  # type: ignore[no-untyped-def]
    # state[0] = 1 + the last session served (0 before the first decision).
    i = next_from(pending, int(state[0]))
    if i < 0:
        i = next_from(pending, 0)  # round the circle
        if i < 0:
            return 0, _NO_WAKE, 0
    chosen[0] = i
    state[0] = i + 1
    return 1, _NO_WAKE, 0


@jit(inline="always")
def _take_oldest(pending, limit, chosen):  # type: ignore[no-untyped-def]
    """Put up to ``limit`` pending sessions, oldest frame first, into ``chosen``."""
    return take_oldest(pending, oldest(pending), limit, chosen)


@jit()
def _batch_all(now, pending, latency, params, state, feedback, chosen, expired):  # type: ignore[no-untyped-def]
    if size(pending) > params[LIMIT]:  # more than fit in memory: the oldest that fit
        return _take_oldest(pending, int(params[LIMIT]), chosen), _NO_WAKE, 0
    return in_session_order(pending, chosen), _NO_WAKE, 0


@jit()
def _max_batch(now, pending, latency, params, state, feedback, chosen, expired):  # type: ignore[no-untyped-def]
    return _take_oldest(pending, int(min(params[0], params[LIMIT])), chosen), _NO_WAKE, 0


@jit()
def _triton(now, pending, latency, params, state, feedback, chosen, expired):  # type: ignore[no-untyped-def]
    # A batch that does not fit in memory is not a batch to wait for.
    limit = int(min(params[0], params[LIMIT]))
    waiting = size(pending)
    if waiting == 0:
        return 0, _NO_WAKE, 0
    position = oldest(pending)
    deadline = pending.at[session_at(pending, position)] + params[1]
    if waiting >= limit or now >= deadline:
        return take_oldest(pending, position, limit, chosen), _NO_WAKE, 0
    return 0, deadline, 0


@jit()
def _aimd(now, pending, latency, params, state, feedback, chosen, expired):  # type: ignore[no-untyped-def]
    # state[1] = the batch cap; 0 means "not started" and reads as 1. It grows up to the
    # session count or the largest batch that fits in memory, whichever is smaller.
    cap = max(1.0, state[1])
    if not math.isnan(feedback):
        if feedback <= params[2]:
            cap = min(cap + 1.0, min(float(pending.at.size), params[LIMIT]))
        else:
            cap = max(1.0, math.floor(0.9 * cap))
    state[1] = cap
    return _take_oldest(pending, int(cap), chosen), _NO_WAKE, 0


@jit()
def _deadline(now, pending, latency, params, state, feedback, chosen, expired):  # type: ignore[no-untyped-def]
    slo = params[2]
    # A frame that cannot finish within the objective even alone expires. Older frames
    # have earlier deadlines, so those are the oldest ones: from the oldest on, until a
    # frame can still make it.
    gone = 0
    position = oldest(pending)
    while not at_end(pending, position):
        i = session_at(pending, position)
        if not now + latency[1] > pending.at[i] + slo:
            break
        expired[gone] = i
        gone += 1
        position = live_from(pending, position + 1)
    waiting = size(pending) - gone
    if waiting == 0:
        return 0, _NO_WAKE, gone
    # The oldest frame has the earliest deadline, so a batch of the k oldest meets every
    # deadline exactly when it meets the oldest one's; the largest such k runs (latency
    # does not fall with batch size, so the k that meet it are 1..k_max).
    oldest_at = pending.at[session_at(pending, position)]
    batch = 1
    largest = min(float(waiting), params[LIMIT])
    while batch < largest and now + latency[batch + 1] <= oldest_at + slo:
        batch += 1
    return take_oldest(pending, position, batch, chosen), _NO_WAKE, gone


_REGISTRY: tuple[Policy, ...] = (
    Policy(
        "oldest-first",
        "one frame at a time, the oldest pending frame first",
        _oldest_first,
        one_at_a_time=True,
    ),
    Policy(
        "round-robin",
        "one frame at a time, sessions served in turn",
        _round_robin,
        one_at_a_time=True,
    ),
    Policy("batch-all", "every pending frame in one batch (the production worker)", _batch_all),
    Policy(
        "max-batch",
        "up to B pending frames, oldest first",
        _max_batch,
        ("max_batch",),
        {"max_batch": 4},
    ),
    Policy(
        "triton",
        "Triton's dynamic batcher: wait up to D µs for B frames, then run up to B oldest",
        _triton,
        ("max_batch", "max_queue_delay_us"),
        {"max_batch": 8, "max_queue_delay_us": 2000},
    ),
    Policy(
        "aimd",
        "Clipper's AIMD: grow the batch cap by 1 while the objective holds, cut 10% if not",
        _aimd,
        ("slo_ms",),
        {"slo_ms": 50},
    ),
    Policy(
        "deadline",
        "Clockwork-like: drop frames that cannot meet the objective, run the largest "
        "batch that meets every deadline",
        _deadline,
        ("slo_ms",),
        {"slo_ms": 50},
    ),
)

POLICIES: dict[str, Policy] = {p.name: replace(p, pid=i) for i, p in enumerate(_REGISTRY)}
"""The policies by name, in the order the recommendation lists them."""


@jit()
def decide(pid, now, pending, latency, params, state, feedback, chosen, expired):  # type: ignore[no-untyped-def]
    """Run the kernel of policy ``pid`` (``Policy.pid``) on pending frames given as an
    array, one time per session (+inf: none); an unknown id raises. Returns ``(count,
    wake)`` and marks the sessions whose frame expired in ``expired`` (booleans).

    For the callers that keep their pending frames that way (the reference engine and the
    reference worker): the set is built here at each call, in O(N log N), and the same
    kernels then decide as in the fast engine, which keeps its set from one decision to
    the next."""
    frames = of_times(pending)
    lapsed = np.empty(pending.size, np.int64)
    if pid == 0:
        out = _oldest_first(now, frames, latency, params, state, feedback, chosen, lapsed)
    elif pid == 1:
        out = _round_robin(now, frames, latency, params, state, feedback, chosen, lapsed)
    elif pid == 2:
        out = _batch_all(now, frames, latency, params, state, feedback, chosen, lapsed)
    elif pid == 3:
        out = _max_batch(now, frames, latency, params, state, feedback, chosen, lapsed)
    elif pid == 4:
        out = _triton(now, frames, latency, params, state, feedback, chosen, lapsed)
    elif pid == 5:
        out = _aimd(now, frames, latency, params, state, feedback, chosen, lapsed)
    elif pid == 6:
        out = _deadline(now, frames, latency, params, state, feedback, chosen, lapsed)
    else:
        raise ValueError("unknown policy id")
    count, wake, gone = out
    for k in range(gone):
        expired[lapsed[k]] = True
    return count, wake


def policy_params(
    policy: str, values: Mapping[str, float | None], batch_limit: int | None = None
) -> np.ndarray:
    """The ``params`` array of a policy: ``[max_batch, max_queue_delay_ms, slo_ms,
    batch_limit]``; ``batch_limit`` is the largest batch that fits in memory (None: no
    limit, written as +inf)."""
    spec = POLICIES[policy]

    def get(name: str) -> float:
        value = values.get(name)
        if value is None:
            value = spec.defaults.get(name, 0.0)
        return float(value)

    return np.array(
        [
            get("max_batch"),
            get("max_queue_delay_us") / 1000.0,
            get("slo_ms"),
            math.inf if batch_limit is None else float(batch_limit),
        ],
        dtype=np.float64,
    )


def initial_state() -> np.ndarray:
    return np.zeros(STATE_SIZE, dtype=np.float64)
