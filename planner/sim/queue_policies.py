"""What each scheduling policy does under a server that queues every frame (``queue =
all``, ``planner.sim.queue_all``): twice, once compiled for the fast engine's queue loop
and once in plain Python for the reference engine, which keeps the queue as a list.

Each policy's registry entry (``planner.sim.policies.Policy``) names its two functions
here; neither engine switches on policy names or ids.

**Compiled** (``queue_kernel``), called at each decision of the queue loop::

    queue_kernel(now, waiting, first_ready, slots, latency, params, bound, state,
                 feedback) -> (count, wake, slo, session, state)

``waiting`` requests wait (within their timeout or delayed), the first in queue order
became a request at ``first_ready``; ``slots`` holds the set of sessions with a waiting
request (``planner.sim.pending``; kept only for a policy whose entry says ``by_session``);
``latency`` and ``feedback`` are as for the newest-only kernels (``planner.sim.policies``),
``params`` too but as a tuple, and ``bound`` is the batch cap of the policies without
``max_batch`` (the session count). ``state`` is the policy's memory, two numbers (0 at
the start), which it returns, changed or not. (Tuples, not arrays: the loop inlines these
functions, and arrays they take or write made it count references at every decision, a
third slower.) The answer: take ``count`` requests, in queue order (``session`` -1) or the
oldest of ``session``; while taking in queue order with an objective ``slo`` (+inf: none),
drop from the front the requests that cannot meet it even alone, then stop where the
batch's oldest request would miss it; with ``count`` 0, decide again at ``wake`` (+inf:
when something changes).

**Reference** (``queue_reference``)::

    queue_reference(t, queue, latency, params, sessions, state, feedback)
        -> (take, wake, drop)

``queue`` is the list of waiting requests ``(ready, session, frame)`` in the order the
batcher takes them, ``state`` a dict kept through the run; it returns the requests to run
as one batch, when to be woken (+inf: never) and the requests that expire.
"""

from __future__ import annotations

import math

from planner.sim.jit import jit
from planner.sim.params import DELAY_MS, LIMIT, MAX_BATCH, SLO_MS
from planner.sim.pending import next_from

NONE = math.inf  # no wake-up; no objective
IN_ORDER = -1  # take requests in queue order, not one session's

Request = tuple[float, int, int]  # (ready, session, frame)

# -- compiled: the fast engine's queue loop ------------------------------------------------
# Inlined into the loop (each is a few comparisons, at every decision of every run).


@jit(inline="always")
def oldest_first(now, waiting, first_ready, slots, latency, params, bound, state, feedback):  # type: ignore[no-untyped-def]
    return min(waiting, 1), NONE, NONE, IN_ORDER, state


@jit(inline="always")
def round_robin(now, waiting, first_ready, slots, latency, params, bound, state, feedback):  # type: ignore[no-untyped-def]
    # state[0] = 1 + the last session served; serve the next one in turn, its oldest.
    session = IN_ORDER
    count = 0
    turn = state[0]
    if waiting > 0:
        session = next_from(slots, int(turn))
        if session < 0:
            session = next_from(slots, 0)  # round the circle
        turn = session + 1.0
        count = 1
    return count, NONE, NONE, session, (turn, state[1])


@jit(inline="always")
def batch_all(now, waiting, first_ready, slots, latency, params, bound, state, feedback):  # type: ignore[no-untyped-def]
    return min(waiting, int(min(params[LIMIT], bound))), NONE, NONE, IN_ORDER, state


@jit(inline="always")
def max_batch(now, waiting, first_ready, slots, latency, params, bound, state, feedback):  # type: ignore[no-untyped-def]
    return min(waiting, int(min(params[LIMIT], params[MAX_BATCH]))), NONE, NONE, IN_ORDER, state


@jit(inline="always")
def triton(now, waiting, first_ready, slots, latency, params, bound, state, feedback):  # type: ignore[no-untyped-def]
    limit = int(min(params[LIMIT], params[MAX_BATCH]))
    count = 0
    wake = NONE
    if waiting > 0:
        if waiting >= limit or now >= first_ready + params[DELAY_MS]:
            count = min(waiting, limit)
        else:
            wake = first_ready + params[DELAY_MS]
    return count, wake, NONE, IN_ORDER, state


@jit(inline="always")
def aimd(now, waiting, first_ready, slots, latency, params, bound, state, feedback):  # type: ignore[no-untyped-def]
    # state[1] = the batch cap (0: 1), learnt from every completed batch, whether or not one waits.
    cap = max(1.0, state[1])
    if not math.isnan(feedback):
        if feedback <= params[SLO_MS]:
            cap = min(cap + 1.0, min(params[LIMIT], bound))
        else:
            cap = max(1.0, math.floor(0.9 * cap))
    return min(waiting, int(cap)), NONE, NONE, IN_ORDER, (state[0], cap)


@jit(inline="always")
def deadline(now, waiting, first_ready, slots, latency, params, bound, state, feedback):  # type: ignore[no-untyped-def]
    return min(waiting, int(min(params[LIMIT], bound))), NONE, params[SLO_MS], IN_ORDER, state


# -- plain Python: the reference engine ----------------------------------------------------


def _limit(params: object, by: float) -> int:
    return int(min(by, params[LIMIT]))  # type: ignore[index]


def oldest_first_reference(t, queue, latency, params, sessions, state, feedback):  # type: ignore[no-untyped-def]
    return queue[:1], NONE, []


def round_robin_reference(t, queue, latency, params, sessions, state, feedback):  # type: ignore[no-untyped-def]
    if not queue:
        return [], NONE, []
    with_request = sorted({s for _, s, _ in queue})
    later = [s for s in with_request if s >= state.get("turn", 0)]
    session = later[0] if later else with_request[0]
    state["turn"] = session + 1
    return [min((r for r in queue if r[1] == session), key=lambda r: r[2])], NONE, []


def batch_all_reference(t, queue, latency, params, sessions, state, feedback):  # type: ignore[no-untyped-def]
    return queue[: _limit(params, sessions)], NONE, []


def max_batch_reference(t, queue, latency, params, sessions, state, feedback):  # type: ignore[no-untyped-def]
    return queue[: _limit(params, params[MAX_BATCH])], NONE, []


def triton_reference(t, queue, latency, params, sessions, state, feedback):  # type: ignore[no-untyped-def]
    limit = _limit(params, params[MAX_BATCH])
    if not queue:
        return [], NONE, []
    if len(queue) >= limit or t >= queue[0][0] + params[DELAY_MS]:
        return queue[:limit], NONE, []
    return [], queue[0][0] + params[DELAY_MS], []


def aimd_reference(t, queue, latency, params, sessions, state, feedback):  # type: ignore[no-untyped-def]
    cap = state.get("cap", 1.0)
    if not math.isnan(feedback):
        met = feedback <= params[SLO_MS]
        cap = min(cap + 1, _limit(params, sessions)) if met else max(1, math.floor(0.9 * cap))
    state["cap"] = cap
    return queue[: int(cap)], NONE, []


def deadline_reference(t, queue, latency, params, sessions, state, feedback):  # type: ignore[no-untyped-def]
    slo = params[SLO_MS]
    queue = list(queue)
    drop = []
    while queue and t + latency[1] > queue[0][0] + slo:
        drop.append(queue.pop(0))
    size = 1 if queue else 0
    while size < min(len(queue), _limit(params, sessions)) and (
        t + latency[size + 1] <= queue[0][0] + slo
    ):
        size += 1
    return queue[:size], NONE, drop
