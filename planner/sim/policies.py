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

Adding a policy: write its kernel, and what it does under a server that queues every
frame, compiled and in plain Python (``planner.sim.queue_policies``), and add one
``Policy`` entry to ``_REGISTRY`` (or ``register`` one at run time). Its id is its
position in the registry; the engines reach its code through switches written out from
the registry (``switched``, ``planner.sim.dispatch``), so nothing else names it. The
dashboard and the command line list ``POLICIES``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, overload

import numpy as np

from planner.sim import queue_policies as queued
from planner.sim.dispatch import by_policy, compiled
from planner.sim.jit import jit
from planner.sim.params import DELAY_MS, LIMIT, MAX_BATCH, SLO_MS
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
_NO_WAKE = math.inf


@dataclass(frozen=True)
class Policy:
    """A policy: its name (part of the interface), what it does, and its code: ``kernel``
    decides when each session keeps only its newest frame (the module docstring);
    ``queue_kernel`` and ``queue_reference`` decide, compiled and in plain Python, when the
    server queues every frame (``planner.sim.queue_policies``; ``by_session``: the queue
    loop keeps the set of sessions with a waiting request for it). Then its parameters
    and their defaults, and its id: its position in the registry, which the compiled
    switches use. ``one_at_a_time`` says its batches always hold one frame (so no memory
    limit binds)."""

    name: str
    summary: str
    kernel: Callable[..., Any] = field(repr=False, compare=False)
    queue_kernel: Callable[..., Any] = field(repr=False, compare=False)
    queue_reference: Callable[..., Any] = field(repr=False, compare=False)
    params: tuple[str, ...] = ()
    defaults: Mapping[str, float] = field(default_factory=dict)
    pid: int = -1
    one_at_a_time: bool = False
    by_session: bool = False


# -- kernels -----------------------------------------------------------------------------
# Every kernel has the signature described in the module docstring. Ties in arrival time
# are broken by the lower session index (the pending set keeps frames in that order).
# Kernels allocate nothing and look only at the frames they take or skip: they run at
# every decision of every simulation.


@jit(inline="always")
def _answer(count, wake, gone, at, slots, latency, params, state, chosen, expired):  # type: ignore[no-untyped-def]
    """A kernel's answer, ``(count, wake, gone)``. Each kernel returns once, through here,
    with all its arrays: Numba counts references to the arrays a compiled function holds
    and leaves the counting out only where it finds each array's last use in one place.
    Kernels that returned from several places, or used an array on some branches only,
    paid for it at every call, several times the cost of the decision itself (the
    helpers of ``planner.sim.pending`` have no early returns for the same reason)."""
    return count, wake, gone


@jit()
def _oldest_first(now, pending, latency, params, state, feedback, chosen, expired):  # type: ignore[no-untyped-def]
    at, slots = pending
    position = oldest(slots)
    count = 0
    if not at_end(slots, position):
        chosen[0] = session_at(slots, position)
        count = 1
    return _answer(count, _NO_WAKE, 0, at, slots, latency, params, state, chosen, expired)


@jit()
def _round_robin(now, pending, latency, params, state, feedback, chosen, expired):  # type: ignore[no-untyped-def]
    # state[0] = 1 + the last session served (0 before the first decision).
    at, slots = pending
    i = next_from(slots, int(state[0]))
    if i < 0:
        i = next_from(slots, 0)  # round the circle
    count = 0
    if i >= 0:
        chosen[0] = i
        state[0] = i + 1
        count = 1
    return _answer(count, _NO_WAKE, 0, at, slots, latency, params, state, chosen, expired)


@jit(inline="always")
def _take_oldest(slots, limit, chosen):  # type: ignore[no-untyped-def]
    """Put up to ``limit`` pending sessions, oldest frame first, into ``chosen``."""
    return take_oldest(slots, oldest(slots), limit, chosen)


@jit()
def _batch_all(now, pending, latency, params, state, feedback, chosen, expired):  # type: ignore[no-untyped-def]
    at, slots = pending
    # More than fit in memory: the oldest that fit; else every one, in session order.
    # (One after the other, the first taking none when all fit: as an if/else, the two
    # loops kept Numba counting references at every call; see ``_answer``.)
    over = size(slots) > params[LIMIT]
    count = _take_oldest(slots, int(params[LIMIT]) if over else 0, chosen)
    if not over:
        count = in_session_order(slots, chosen)
    return _answer(count, _NO_WAKE, 0, at, slots, latency, params, state, chosen, expired)


@jit()
def _max_batch(now, pending, latency, params, state, feedback, chosen, expired):  # type: ignore[no-untyped-def]
    at, slots = pending
    count = _take_oldest(slots, int(min(params[MAX_BATCH], params[LIMIT])), chosen)
    return _answer(count, _NO_WAKE, 0, at, slots, latency, params, state, chosen, expired)


@jit()
def _triton(now, pending, latency, params, state, feedback, chosen, expired):  # type: ignore[no-untyped-def]
    at, slots = pending
    # A batch that does not fit in memory is not a batch to wait for.
    limit = int(min(params[MAX_BATCH], params[LIMIT]))
    count = 0
    wake = _NO_WAKE
    if size(slots) > 0:
        position = oldest(slots)
        deadline = at[session_at(slots, position)] + params[DELAY_MS]
        if size(slots) >= limit or now >= deadline:
            count = take_oldest(slots, position, limit, chosen)
        else:
            wake = deadline
    return _answer(count, wake, 0, at, slots, latency, params, state, chosen, expired)


@jit()
def _aimd(now, pending, latency, params, state, feedback, chosen, expired):  # type: ignore[no-untyped-def]
    # state[1] = the batch cap; 0 means "not started" and reads as 1. It grows up to the
    # session count or the largest batch that fits in memory, whichever is smaller.
    at, slots = pending
    cap = max(1.0, state[1])
    if not math.isnan(feedback):
        if feedback <= params[SLO_MS]:
            cap = min(cap + 1.0, min(float(at.size), params[LIMIT]))
        else:
            cap = max(1.0, math.floor(0.9 * cap))
    state[1] = cap
    count = _take_oldest(slots, int(cap), chosen)
    return _answer(count, _NO_WAKE, 0, at, slots, latency, params, state, chosen, expired)


@jit()
def _deadline(now, pending, latency, params, state, feedback, chosen, expired):  # type: ignore[no-untyped-def]
    at, slots = pending
    slo = params[SLO_MS]
    # A frame that cannot finish within the objective even alone expires. Older frames
    # have earlier deadlines, so those are the oldest ones: from the oldest on, until a
    # frame can still make it.
    gone = 0
    position = oldest(slots)
    while not at_end(slots, position) and now + latency[1] > at[session_at(slots, position)] + slo:
        expired[gone] = session_at(slots, position)
        gone += 1
        position = live_from(slots, position + 1)
    count = 0
    waiting = size(slots) - gone
    if waiting > 0:
        # The oldest frame has the earliest deadline, so a batch of the k oldest meets
        # every deadline exactly when it meets the oldest one's; the largest such k runs
        # (latency does not fall with batch size, so the k that meet it are 1..k_max).
        oldest_at = at[session_at(slots, position)]
        batch = 1
        largest = min(float(waiting), params[LIMIT])
        while batch < largest and now + latency[batch + 1] <= oldest_at + slo:
            batch += 1
        count = take_oldest(slots, position, batch, chosen)
    return _answer(count, _NO_WAKE, gone, at, slots, latency, params, state, chosen, expired)


_REGISTRY: tuple[Policy, ...] = (
    Policy(
        "oldest-first",
        "one frame at a time, the oldest pending frame first",
        _oldest_first,
        queued.oldest_first,
        queued.oldest_first_reference,
        one_at_a_time=True,
    ),
    Policy(
        "round-robin",
        "one frame at a time, sessions served in turn",
        _round_robin,
        queued.round_robin,
        queued.round_robin_reference,
        one_at_a_time=True,
        by_session=True,
    ),
    Policy(
        "batch-all",
        "every pending frame in one batch (the production worker)",
        _batch_all,
        queued.batch_all,
        queued.batch_all_reference,
    ),
    Policy(
        "max-batch",
        "up to B pending frames, oldest first",
        _max_batch,
        queued.max_batch,
        queued.max_batch_reference,
        ("max_batch",),
        {"max_batch": 4},
    ),
    Policy(
        "triton",
        "Triton's dynamic batcher: wait up to D µs for B frames, then run up to B oldest",
        _triton,
        queued.triton,
        queued.triton_reference,
        ("max_batch", "max_queue_delay_us"),
        {"max_batch": 8, "max_queue_delay_us": 2000},
    ),
    Policy(
        "aimd",
        "Clipper's AIMD: grow the batch cap by 1 while the objective holds, cut 10% if not",
        _aimd,
        queued.aimd,
        queued.aimd_reference,
        ("slo_ms",),
        {"slo_ms": 50},
    ),
    Policy(
        "deadline",
        "Clockwork-like: drop frames that cannot meet the objective, run the largest "
        "batch that meets every deadline",
        _deadline,
        queued.deadline,
        queued.deadline_reference,
        ("slo_ms",),
        {"slo_ms": 50},
    ),
)

POLICIES: dict[str, Policy] = {p.name: replace(p, pid=i) for i, p in enumerate(_REGISTRY)}
"""The policies by name, in the order the recommendation lists them (``register`` and
``unregister`` change it; the ids follow the order)."""


class Names(Sequence[str]):
    """The registered policies' names in order, read from ``POLICIES`` each time they are
    used (the link codecs' choices), so a policy registered later is accepted too."""

    @overload
    def __getitem__(self, index: int) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[str]: ...
    def __getitem__(self, index: int | slice) -> str | Sequence[str]:
        return list(POLICIES)[index]

    def __len__(self) -> int:
        return len(POLICIES)

    def __contains__(self, name: object) -> bool:
        return name in POLICIES

    def __iter__(self) -> Iterator[str]:
        return iter(list(POLICIES))

    def __repr__(self) -> str:
        return f"Names({list(POLICIES)!r})"


POLICY_NAMES = Names()


def register(policy: Policy) -> Policy:
    """Add ``policy`` after the registered ones; every engine, the recommendation and the
    command line of this process then offer it (a study's pool workers are processes of
    their own and know only the policies registered when the package is imported).
    Returns its entry, with its id."""
    if policy.name in POLICIES:
        raise ValueError(f"a policy named {policy.name!r} is registered already")
    entry = replace(policy, pid=len(POLICIES))
    POLICIES[entry.name] = entry
    return entry


def unregister(name: str) -> None:
    """Remove the policy ``name``; the ones after it take the ids before."""
    del POLICIES[name]
    for pid, (key, policy) in enumerate(list(POLICIES.items())):
        POLICIES[key] = replace(policy, pid=pid)


def switched(source: Callable[..., Any], code: str = "kernel", **options: Any) -> Any:
    """``source``, whose ``by_policy`` calls run a policy's ``code`` (``kernel`` or
    ``queue_kernel``), compiled for the policies registered now (``planner.sim.dispatch``)
    with ``options``: cached on disk for the built-in ones, in this process for others."""
    kernels = tuple(getattr(p, code) for p in POLICIES.values())
    built_in = kernels == tuple(getattr(p, code) for p in _REGISTRY)
    return compiled(source, kernels, built_in, tuple(sorted(options.items())))


def _decide(pid, now, pending, latency, params, state, feedback, chosen, expired):  # type: ignore[no-untyped-def]
    frames = of_times(pending)
    lapsed = np.empty(pending.size, np.int64)
    count, wake, gone = by_policy(pid, now, frames, latency, params, state, feedback, chosen,
                                  lapsed)  # fmt: skip
    for k in range(gone):
        expired[lapsed[k]] = True
    return count, wake


def decide(pid, now, pending, latency, params, state, feedback, chosen, expired):  # type: ignore[no-untyped-def]
    """Run the kernel of policy ``pid`` (``Policy.pid``) on pending frames given as an
    array, one time per session (+inf: none); an unknown id raises. Returns ``(count,
    wake)`` and marks the sessions whose frame expired in ``expired`` (booleans).

    For the callers that keep their pending frames that way (the reference engine and the
    reference worker): the set is built here at each call, in O(N log N), and the same
    kernels then decide as in the fast engine, which keeps its set from one decision to
    the next."""
    return switched(_decide)(pid, now, pending, latency, params, state, feedback, chosen,
                             expired)  # fmt: skip


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
