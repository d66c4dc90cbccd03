"""The fast engine: the same semantics as the reference engine, stepping from one GPU
decision to the next instead of from event to event.

Why this is exact: the GPU is the only resource and a session holds at most one pending
frame — its newest arrival. So the state at any instant is, per session, how many of its
frames have arrived (``arrived``, an index into its sorted arrival times) and how many
are resolved (delivered, dropped or overwritten: ``taken``); the pending frame, if any,
is the last arrived one. Between decisions nothing but arrivals happens, and arrivals are
precomputed, so the loop jumps straight to the next decision time: the end of the running
batch, else the next arrival, else the time the policy asked to be woken. Overwrites are
counted lazily, when a session's pending frame is resolved, which gives the same totals
as counting each arrival.

Compiled with Numba through ``planner.jit`` (compiled once per machine and version of the
compiled sources, then loaded from cache). The loop releases the GIL, so the many-run
engine (``planner.ensemble``) runs it on several threads at once.
"""

from __future__ import annotations

import math

import numpy as np

from planner.arrivals import arrivals
from planner.jit import jit
from planner.policies import (
    POLICIES,
    STATE_SIZE,
    _aimd,
    _batch_all,
    _deadline,
    _max_batch,
    _oldest_first,
    _round_robin,
    _triton,
)
from planner.records import Records
from planner.scenario import Scenario
from planner.sharing import Timeline, cotenant_timeline, effective_table, finish, horizon

_NO_TIMELINE = np.zeros(1)


def run_fast(scenario: Scenario) -> Records:
    """Simulate ``scenario`` and return its records (identical to ``run_reference``)."""
    arrival = arrivals(scenario)
    table = effective_table(np.asarray(scenario.latency_ms), scenario.sharing)
    timeline = cotenant_timeline(scenario.sharing, scenario.seed, horizon(scenario, table))
    return run_prepared(
        arrival.times,
        arrival.start,
        scenario.duration_ms,
        np.r_[0.0, table],
        POLICIES[scenario.policy].pid,
        scenario.policy_params(),
        timeline,
    )


def run_prepared(
    times: np.ndarray,
    start: np.ndarray,
    duration_ms: float,
    latency: np.ndarray,
    pid: int,
    params: np.ndarray,
    timeline: Timeline | None = None,
) -> Records:
    """Run the compiled loop on prepared inputs (arrivals, latency[b], policy id/params)."""
    if timeline is None:
        edges = speed = work = _NO_TIMELINE
        slicing = False
    else:
        edges, speed, work = timeline.edges, timeline.speed, timeline.work
        slicing = True
    out = _loop(times, start, duration_ms, latency, pid, params, slicing, edges, speed, work)
    (
        frames, batches, frame_session, frame_index, frame_batch, frame_arrival,
        frame_latency, batch_start, batch_end, batch_size, counters,
    ) = out  # fmt: skip
    return Records(
        frame_session=frame_session[:frames],
        frame_index=frame_index[:frames],
        frame_batch=frame_batch[:frames],
        frame_arrival=frame_arrival[:frames],
        frame_latency=frame_latency[:frames],
        batch_start=batch_start[:batches],
        batch_end=batch_end[:batches],
        batch_size=batch_size[:batches],
        arrived=counters[0],
        delivered=counters[1],
        overwritten=counters[2],
        expired=counters[3],
        pending=counters[4],
    )


@jit(nogil=True)
def _loop(times, start, duration, latency, pid, params, slicing, edges, speed, work):  # type: ignore[no-untyped-def]
    """The simulation proper; returns (frames, batches, then the record arrays: frame
    session, index, batch, arrival, latency; batch start, end, size; and the per-session
    counters arrived, delivered, overwritten, expired, pending as rows)."""
    n = start.size - 1
    total = times.size  # no run delivers more frames, or runs more batches, than arrive
    frame_session = np.empty(total, np.int64)
    frame_index = np.empty(total, np.int64)
    frame_batch = np.empty(total, np.int64)
    frame_arrival = np.empty(total, np.float64)
    frame_latency = np.empty(total, np.float64)
    batch_start = np.empty(total, np.float64)
    batch_end = np.empty(total, np.float64)
    batch_size = np.empty(total, np.int64)
    counters = np.zeros((5, n), np.int64)
    arrived = start[:-1].copy()  # global index of each session's next frame to arrive
    taken = start[:-1].copy()  # global index of each session's first unresolved frame
    stop = start[1:]
    # Each session's next arrival time and newest arrived frame's time, kept in small
    # arrays so the scan at every decision stays in cache.
    upcoming = np.full(n, math.inf)
    newest_at = np.zeros(n, np.float64)
    for i in range(n):
        if start[i] < stop[i]:
            upcoming[i] = times[start[i]]
    pending = np.empty(n, np.float64)
    chosen = np.zeros(n, np.int64)
    dropped = np.zeros(n, np.bool_)
    state = np.zeros(STATE_SIZE, np.float64)
    feedback = math.nan
    frames = 0
    batches = 0

    # The first decision happens at the first arrival.
    now = upcoming.min() if n > 0 else math.inf

    while now < duration:
        # Every arrival up to and including `now` happens before the decision.
        for i in range(n):
            if upcoming[i] <= now:
                a = arrived[i] + 1
                while a < stop[i] and times[a] <= now:
                    a += 1
                arrived[i] = a
                newest_at[i] = times[a - 1]
                upcoming[i] = times[a] if a < stop[i] else math.inf
            pending[i] = newest_at[i] if arrived[i] > taken[i] else math.inf

        # The same switch as ``policies.decide``, written out: calling ``decide`` here (or
        # inlining it) made runs 10-25% slower, and a kernel called directly costs nothing.
        # Both switches have an explicit branch per policy id and raise on any other; the
        # tests run every registered policy through each.
        if pid == 0:
            count, wake = _oldest_first(now, pending, latency, params, state, feedback, chosen,
                                        dropped)  # fmt: skip
        elif pid == 1:
            count, wake = _round_robin(now, pending, latency, params, state, feedback, chosen,
                                       dropped)  # fmt: skip
        elif pid == 2:
            count, wake = _batch_all(now, pending, latency, params, state, feedback, chosen,
                                     dropped)  # fmt: skip
        elif pid == 3:
            count, wake = _max_batch(now, pending, latency, params, state, feedback, chosen,
                                     dropped)  # fmt: skip
        elif pid == 4:
            count, wake = _triton(now, pending, latency, params, state, feedback, chosen, dropped)
        elif pid == 5:
            count, wake = _aimd(now, pending, latency, params, state, feedback, chosen, dropped)
        elif pid == 6:
            count, wake = _deadline(now, pending, latency, params, state, feedback, chosen,
                                    dropped)  # fmt: skip
        else:
            raise ValueError("unknown policy id")
        feedback = math.nan
        for i in range(n):
            if dropped[i]:
                dropped[i] = False
                counters[3, i] += 1
                counters[2, i] += arrived[i] - 1 - taken[i]
                taken[i] = arrived[i]

        if count > 0:
            if slicing:
                end = finish(edges, speed, work, now, latency[count])
            else:
                end = now + latency[count]
            worst = 0.0
            for c in range(count):
                i = chosen[c]
                newest = arrived[i] - 1
                counters[2, i] += newest - taken[i]
                counters[1, i] += 1
                taken[i] = arrived[i]
                frame_session[frames] = i
                frame_index[frames] = newest - start[i]
                frame_batch[frames] = batches
                frame_arrival[frames] = times[newest]
                frame_latency[frames] = end - times[newest]
                worst = max(worst, end - times[newest])
                frames += 1
            batch_start[batches] = now
            batch_end[batches] = end
            batch_size[batches] = count
            batches += 1
            feedback = worst
            now = end  # the next decision is when this batch completes
        else:
            following = wake
            for i in range(n):
                following = min(following, upcoming[i])
            now = following

    # Arrivals the loop did not reach (after the last batch ran past the end) still count.
    for i in range(n):
        counters[0, i] = stop[i] - start[i]
        last = stop[i] - 1
        if last >= taken[i]:
            counters[4, i] = 1
            counters[2, i] += last - taken[i]
    return (
        frames, batches, frame_session, frame_index, frame_batch, frame_arrival,
        frame_latency, batch_start, batch_end, batch_size, counters,
    )  # fmt: skip
