"""Scheduling policies: which pending frames go into the next batch (SPEC §3.3).

A policy is one small function with one signature, compiled with Numba so the fast
engine can call it in its inner loop; the reference engine calls the same compiled
functions through ``decide``. (So the differential test checks the engines, not the
policies: the policies are checked by hand-worked traces and by tests against plain
Python selections.) At each decision the GPU is free and the engine passes:

- ``now``: the decision time (ms);
- ``pending``: for each session, the arrival time of its pending frame (the newest one),
  or +inf when it has none (a kernel may overwrite it: the engines rebuild it each time);
- ``latency``: ``latency[b]`` = the latency of a batch of ``b`` frames as the scheduler
  knows it (index 0 unused);
- ``params``: ``[max_batch, max_queue_delay_ms, slo_ms, batch_limit]`` (each policy reads
  its own; ``batch_limit``, the largest batch that fits in memory, caps every policy's
  batch, and is +inf when memory does not limit);
- ``state``: the policy's memory between decisions (``STATE_SIZE`` floats, zeroed by
  ``initial_state``); ``feedback``: the worst GPU-side latency of the batch that completed
  since the previous decision, or NaN;
- ``chosen`` / ``expired``: output buffers.

It returns ``(count, wake)``: run the sessions ``chosen[:count]`` as one batch; or, with
``count == 0``, run nothing and decide again at ``wake`` (+inf: at the next arrival).
Sessions it marks in ``expired`` drop their pending frame as expired.

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
# are broken by the lower session index. Kernels allocate nothing: they run at every
# decision of every simulation.


@jit()
def _oldest_first(now, pending, latency, params, state, feedback, chosen, expired):  # type: ignore[no-untyped-def]
    best = -1
    for i in range(pending.size):
        if pending[i] < math.inf and (best < 0 or pending[i] < pending[best]):
            best = i
    if best < 0:
        return 0, _NO_WAKE
    chosen[0] = best
    return 1, _NO_WAKE


@jit()
def _round_robin(now, pending, latency, params, state, feedback, chosen, expired):  # type: ignore[no-untyped-def]
    # state[0] = 1 + the last session served (0 before the first decision).
    n = pending.size
    start = int(state[0])
    for step in range(n):
        i = (start + step) % n
        if pending[i] < math.inf:
            chosen[0] = i
            state[0] = i + 1
            return 1, _NO_WAKE
    return 0, _NO_WAKE


@jit()
def _take_oldest(pending, limit, chosen):  # type: ignore[no-untyped-def]
    """Put up to ``limit`` pending sessions, oldest frame first, into ``chosen``.

    A bounded insertion sort: sessions are scanned in index order and an equal arrival
    never moves ahead of an earlier index, so ties go to the lower session index.
    """
    count = 0
    for i in range(pending.size):
        arrived = pending[i]
        if not arrived < math.inf:
            continue
        if count < limit:
            position = count
            count += 1
        elif arrived < pending[chosen[count - 1]]:
            position = count - 1  # displaces the youngest of those taken so far
        else:
            continue
        while position > 0 and pending[chosen[position - 1]] > arrived:
            chosen[position] = chosen[position - 1]
            position -= 1
        chosen[position] = i
    return count


@jit()
def _batch_all(now, pending, latency, params, state, feedback, chosen, expired):  # type: ignore[no-untyped-def]
    count = 0
    for i in range(pending.size):
        if pending[i] < math.inf:
            chosen[count] = i
            count += 1
    if count > params[LIMIT]:  # more than fit in memory: the oldest that fit
        return _take_oldest(pending, int(params[LIMIT]), chosen), _NO_WAKE
    return count, _NO_WAKE


@jit()
def _max_batch(now, pending, latency, params, state, feedback, chosen, expired):  # type: ignore[no-untyped-def]
    return _take_oldest(pending, int(min(params[0], params[LIMIT])), chosen), _NO_WAKE


@jit()
def _triton(now, pending, latency, params, state, feedback, chosen, expired):  # type: ignore[no-untyped-def]
    # A batch that does not fit in memory is not a batch to wait for.
    limit = int(min(params[0], params[LIMIT]))
    waiting = 0
    oldest = math.inf
    for i in range(pending.size):
        if pending[i] < math.inf:
            waiting += 1
            oldest = min(oldest, pending[i])
    if waiting == 0:
        return 0, _NO_WAKE
    deadline = oldest + params[1]
    if waiting >= limit or now >= deadline:
        return _take_oldest(pending, limit, chosen), _NO_WAKE
    return 0, deadline


@jit()
def _aimd(now, pending, latency, params, state, feedback, chosen, expired):  # type: ignore[no-untyped-def]
    # state[1] = the batch cap; 0 means "not started" and reads as 1. It grows up to the
    # session count or the largest batch that fits in memory, whichever is smaller.
    cap = max(1.0, state[1])
    if not math.isnan(feedback):
        if feedback <= params[2]:
            cap = min(cap + 1.0, min(float(pending.size), params[LIMIT]))
        else:
            cap = max(1.0, math.floor(0.9 * cap))
    state[1] = cap
    return _take_oldest(pending, int(cap), chosen), _NO_WAKE


@jit()
def _deadline(now, pending, latency, params, state, feedback, chosen, expired):  # type: ignore[no-untyped-def]
    slo = params[2]
    waiting = 0
    oldest = math.inf
    for i in range(pending.size):
        if pending[i] < math.inf:
            if now + latency[1] > pending[i] + slo:
                expired[i] = True  # cannot finish within the objective even alone
                pending[i] = math.inf
            else:
                waiting += 1
                oldest = min(oldest, pending[i])
    if waiting == 0:
        return 0, _NO_WAKE
    # The oldest frame has the earliest deadline, so a batch of the k oldest meets every
    # deadline exactly when it meets the oldest one's; the largest such k runs (latency
    # does not fall with batch size, so the k that meet it are 1..k_max).
    size = 1
    largest = min(float(waiting), params[LIMIT])
    while size < largest and now + latency[size + 1] <= oldest + slo:
        size += 1
    return _take_oldest(pending, size, chosen), _NO_WAKE


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
    """Run the kernel of policy ``pid`` (``Policy.pid``); an unknown id raises."""
    if pid == 0:
        return _oldest_first(now, pending, latency, params, state, feedback, chosen, expired)
    elif pid == 1:
        return _round_robin(now, pending, latency, params, state, feedback, chosen, expired)
    elif pid == 2:
        return _batch_all(now, pending, latency, params, state, feedback, chosen, expired)
    elif pid == 3:
        return _max_batch(now, pending, latency, params, state, feedback, chosen, expired)
    elif pid == 4:
        return _triton(now, pending, latency, params, state, feedback, chosen, expired)
    elif pid == 5:
        return _aimd(now, pending, latency, params, state, feedback, chosen, expired)
    elif pid == 6:
        return _deadline(now, pending, latency, params, state, feedback, chosen, expired)
    raise ValueError("unknown policy id")


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
