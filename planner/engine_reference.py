"""The reference engine: the plainest correct discrete-event loop for SPEC §3.3.

A heap of events ordered by ``(time, priority, sequence)``: at one instant a batch
completion (priority 0) comes before arrivals (1), and the policy decides once after all
events of that instant, when the GPU is free — so a frame that arrives exactly when the
GPU frees is eligible for the next batch. The sequence number, owned by the loop, makes
the order total without ever comparing sessions or frames.

It is slow on purpose: the fast engine (``planner.engine_fast``) must produce exactly the
same records, and the tests and ``planner bench`` compare the two.
"""

from __future__ import annotations

import heapq
import itertools
import math

import numpy as np

from planner.arrivals import arrivals
from planner.policies import POLICIES, decide, initial_state
from planner.records import Records
from planner.scenario import Scenario
from planner.sharing import cotenant_timeline, effective_table, finish, horizon

COMPLETE, ARRIVE, WAKE = 0, 1, 2


def run_reference(scenario: Scenario) -> Records:
    """Simulate ``scenario`` event by event and return its records."""
    n = scenario.sessions
    duration = scenario.duration_ms
    arrival = arrivals(scenario)
    table = effective_table(np.asarray(scenario.latency_ms), scenario.sharing)
    latency = np.r_[0.0, table]  # latency[b] for a batch of b
    timeline = cotenant_timeline(scenario.sharing, scenario.seed, horizon(scenario, table))
    params = scenario.policy_params()
    pid = POLICIES[scenario.policy].pid
    state = initial_state()

    sequence = itertools.count()
    events: list[tuple[float, int, int, int, int]] = []
    for session in range(n):
        for k, t in enumerate(arrival.of(session)):
            heapq.heappush(events, (float(t), ARRIVE, next(sequence), session, k))

    waiting: dict[int, tuple[int, float]] = {}  # session -> (frame index, arrival time)
    arrived = np.zeros(n, np.int64)
    delivered = np.zeros(n, np.int64)
    overwritten = np.zeros(n, np.int64)
    expired = np.zeros(n, np.int64)
    frames: list[tuple[int, int, int, float, float]] = []
    batches: list[tuple[float, float, int]] = []
    gpu_busy = False
    wake_at = math.inf  # the time the last decision asked to be woken at
    feedback = math.nan  # worst latency of the batch that just completed
    reason_to_decide = False

    while events:
        t, kind, _, a, b = heapq.heappop(events)
        if kind == COMPLETE:
            gpu_busy = False
            reason_to_decide = True
        elif kind == ARRIVE:
            arrived[a] += 1
            if a in waiting:
                overwritten[a] += 1  # the newer frame replaces the waiting one
            waiting[a] = (b, t)
            reason_to_decide = True
        elif kind == WAKE and t == wake_at:
            reason_to_decide = True
        if events and events[0][0] == t:
            continue  # decide only after every event of this instant
        if not reason_to_decide or gpu_busy or t >= duration:
            continue
        reason_to_decide = False

        pending = np.full(n, math.inf)
        for session, (_, arrived_at) in waiting.items():
            pending[session] = arrived_at
        chosen = np.zeros(n, np.int64)
        dropped = np.zeros(n, np.bool_)
        count, wake = decide(pid, t, pending, latency, params, state, feedback, chosen, dropped)
        feedback = math.nan
        wake_at = math.inf
        for gone in np.flatnonzero(dropped).tolist():
            expired[gone] += 1
            del waiting[gone]
        if count == 0:
            if wake < math.inf:
                wake_at = wake
                heapq.heappush(events, (wake, WAKE, next(sequence), -1, -1))
            continue
        end = (
            t + latency[count]
            if timeline is None
            else finish(timeline.edges, timeline.speed, timeline.work, t, latency[count])
        )
        worst = 0.0
        for served in chosen[:count].tolist():
            k, arrived_at = waiting.pop(served)
            delivered[served] += 1
            frames.append((served, k, len(batches), arrived_at, end - arrived_at))
            worst = max(worst, end - arrived_at)
        batches.append((t, end, int(count)))
        feedback = worst
        gpu_busy = True
        heapq.heappush(events, (end, COMPLETE, next(sequence), -1, -1))

    pending_end = np.zeros(n, np.int64)
    for session in waiting:
        pending_end[session] = 1
    return Records(
        frame_session=np.array([f[0] for f in frames], np.int64),
        frame_index=np.array([f[1] for f in frames], np.int64),
        frame_batch=np.array([f[2] for f in frames], np.int64),
        frame_arrival=np.array([f[3] for f in frames], np.float64),
        frame_latency=np.array([f[4] for f in frames], np.float64),
        batch_start=np.array([b[0] for b in batches], np.float64),
        batch_end=np.array([b[1] for b in batches], np.float64),
        batch_size=np.array([b[2] for b in batches], np.int64),
        arrived=arrived,
        delivered=delivered,
        overwritten=overwritten,
        expired=expired,
        pending=pending_end,
    )
