"""The fast engine for a server that queues every frame (``Scenario.queue == "all"``).

Triton, KServe and most inference servers do not keep only a session's newest frame:
every frame is a request that waits in one queue until the dynamic batcher takes it, the
queue policy rejects it, or its timeout applies. Past saturation the queue, and with it
latency, grows through the run instead of frames being overwritten. The semantics, which
the reference engine (``planner.sim.engine_reference.run_reference``) spells out event by
event and this loop must reproduce exactly:

- A frame becomes a request when it reaches the server and its pre stage (a pure delay:
  no finite pool of CPU threads with this queue) ends. Requests join in (time, session)
  order. A request that finds ``max_queue_size`` requests waiting is rejected at once.
- The GPU decides when it is free and something changed (a request joined, the batch
  completed, a wake-up came), after every event of that instant. First the timeout: every
  waiting request whose wait reached ``queue_timeout_us`` is rejected, or, with the
  ``delay`` action, moved behind every request still within its timeout (delayed requests
  keep their order and are served only when none of those waits). Then the policy takes
  requests in queue order (within-timeout requests oldest first, then delayed ones):
  oldest-first one; max-batch up to B; triton up to B once B wait or the oldest has waited
  the queue delay (else it wakes then); batch-all every waiting one; aimd its cap;
  deadline drops, from the front, requests that cannot meet the objective even alone, then
  runs the largest batch whose oldest request meets it; round-robin serves the next session
  in turn that has a request, its oldest (each policy's decision is in
  ``planner.sim.queue_policies``, named by its registry entry). Batches hold at most the
  memory batch limit, at most ``max_batch`` for triton and max-batch, and at most
  ``sessions`` for the others.
- Rejected and timed-out requests, and frames a deadline policy drops, count as
  ``expired``; nothing is ever overwritten; requests still waiting at the end, and frames
  that become requests after it, count as ``pending``.

Without a pool of threads the times requests join are known in advance (the same order the
newest-only engine uses, ``arrivals.arrival_order``), so the queue is that order itself:
a window of it from the oldest waiting request to the last joined, with a flag per frame
for those resolved out of order (round-robin, delayed requests), and a second queue of
delayed requests. The loop steps from one decision to the next, as the newest-only loop
does without a pool, and returns the same tuple (``engine_fast.records_of`` reads it).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from planner.sim.arrivals import Order, arrival_order
from planner.sim.batch_time import spread_arrays
from planner.sim.cascade import NO_CHAIN, Chain, work_ms
from planner.sim.dispatch import by_policy
from planner.sim.params import DELAY_MS, LIMIT, MAX_BATCH, SLO_MS
from planner.sim.pending import add, pending_set, remove
from planner.sim.policies import POLICIES, switched
from planner.sim.scenario import Scenario
from planner.sim.sharing.timeline import Timeline, finish

_RESOLVED, _DELAYED = 1, 2  # a frame's flag: taken, rejected or expired; moved to the delayed queue
_NO_TIMELINE = np.zeros(1)


def queue_params(
    max_queue_size: int | None, timeout_us: float | None, action: str, bound: int
) -> np.ndarray:
    """``[max_queue_size, timeout_ms, delay, bound]`` for ``queue_loop``: +inf where there
    is no bound or timeout, ``delay`` 1 for the delay action, ``bound`` the batch cap of the
    policies without ``max_batch`` (the session count)."""
    return np.array(
        [
            math.inf if max_queue_size is None else float(max_queue_size),
            math.inf if timeout_us is None else timeout_us / 1000.0,
            1.0 if action == "delay" else 0.0,
            float(bound),
        ]
    )


def _queue_loop(times, start, duration, latency, pid, by_session, params, slicing, edges, speed, work, stages, order_session, order_time, queue, sigma, z, chain):  # type: ignore[no-untyped-def]  # noqa: E501  # fmt: skip
    """The loop (see the module docstring). ``order_session``/``order_time``: the sessions
    and times of the frames in the order they become requests (``arrival_order`` without a
    pool); ``queue``: ``queue_params``; ``sigma`` and ``z`` the batch-time spread
    (``planner.sim.batch_time``); ``chain`` the cascade (``planner.sim.cascade``). Returns
    the tuple ``decision_loop`` returns."""
    n = start.size - 1
    total = times.size
    network = stages[0]
    pre = stages[1]
    post = stages[2]
    arrival = times
    if network != 0.0:
        arrival = np.empty(total, np.float64)
        for j in range(total):
            arrival[j] = times[j] + network
    ready = arrival
    if pre != 0.0:
        ready = np.empty(total, np.float64)
        for j in range(total):
            ready[j] = arrival[j] + pre
    owner = np.empty(total, np.int64)
    # A batch's frames are global indices already: the cascade reads its crops through
    # the identity (made only when the crops are drawn).
    identity = np.arange(total if chain[3].shape[1] > 0 else 0)
    for i in range(n):
        for g in range(start[i], start[i + 1]):
            owner[g] = i
    max_size = queue[0]
    timeout = queue[1]
    delay = queue[2] > 0.0
    bound = queue[3]

    frame_session = np.empty(total, np.int64)
    frame_index = np.empty(total, np.int64)
    frame_batch = np.empty(total, np.int64)
    frame_arrival = np.empty(total, np.float64)
    frame_ready = np.empty(total, np.float64)
    frame_latency = np.empty(total, np.float64)
    frame_done = np.empty(total, np.float64)
    batch_start = np.empty(total, np.float64)
    batch_end = np.empty(total, np.float64)
    batch_size = np.empty(total, np.int64)
    counters = np.zeros((5, n), np.int64)

    # The queue: ``fifo[j]`` is the j-th frame to join (a global frame index); requests
    # within their timeout are the entries of fifo[head:joined] flagged 0, delayed ones the
    # entries of delayed[d_head:d_tail] flagged _DELAYED, in the order they were delayed.
    fifo = np.empty(total, np.int64)
    flag = np.zeros(total, np.uint8)
    delayed = np.empty(total if delay else 0, np.int64)
    head = 0
    joined = 0
    d_head = 0
    d_tail = 0
    live = 0  # requests within their timeout
    late = 0  # delayed requests
    next_frame = start[:-1].copy()  # each session's next frame to join
    # A policy that takes by session only (``by_session``): each session's oldest waiting
    # request, how many it has, and the sessions with one.
    rr = by_session
    oldest_of = start[:-1].copy()
    waiting = np.zeros(n, np.int64)
    sessions = pending_set(n)
    chosen = np.empty(max(total, 1), np.int64)  # the batch's frames, in the order taken
    state = (0.0, 0.0)  # the policy's memory (``queue_policies``)
    # The policy's parameters as values: constant through the run.
    values = (params[MAX_BATCH], params[DELAY_MS], params[SLO_MS], params[LIMIT])
    feedback = math.nan
    frames = 0
    batches = 0

    now = math.inf
    if total > 0:
        now = order_time[0]
    while True:
        # Every request joining up to and including `now` joins before the decision; after
        # the last decision, those that join before the end still find the queue full.
        until = now if now < duration else math.nextafter(duration, -math.inf)
        while joined < total and order_time[joined] <= until:
            i = order_session[joined]
            g = next_frame[i]
            next_frame[i] += 1
            fifo[joined] = g
            joined += 1
            if live + late >= max_size:
                flag[g] = _RESOLVED
                counters[3, i] += 1  # rejected: the queue is full
                continue
            live += 1
            if rr:
                if waiting[i] == 0:
                    add(sessions.slots, sessions.at, i, 0.0)
                waiting[i] += 1
        if not now < duration:
            break
        # The timeout, from the oldest request within it on.
        while head < joined and flag[fifo[head]] != 0:
            head += 1
        while head < joined and now >= ready[fifo[head]] + timeout:
            g = fifo[head]
            live -= 1
            if delay:
                flag[g] = _DELAYED
                delayed[d_tail] = g
                d_tail += 1
                late += 1
            else:
                flag[g] = _RESOLVED
                i = owner[g]
                counters[3, i] += 1
                if rr:
                    waiting[i] -= 1
                    if waiting[i] == 0:
                        remove(sessions.slots, sessions.at, i)
            head += 1
            while head < joined and flag[fifo[head]] != 0:
                head += 1
        while d_head < d_tail and flag[delayed[d_head]] == _RESOLVED:
            d_head += 1

        # The policy: how many requests the batch takes, from the front of the queue order
        # or from one session; with an objective, decided while taking.
        waiting_now = live + late
        first_ready = math.inf
        if waiting_now > 0:
            first_ready = ready[fifo[head] if live > 0 else delayed[d_head]]
        count, wake, slo, session, state = by_policy(
            pid, now, waiting_now, first_ready, sessions.slots, latency, values, bound, state,
            feedback,
        )  # fmt: skip
        feedback = math.nan

        taken = 0
        if count > 0 and session >= 0:
            g = oldest_of[session]
            while flag[g] == _RESOLVED:
                g += 1
            oldest_of[session] = g
            if flag[g] == 0:
                live -= 1
            else:
                late -= 1
            flag[g] = _RESOLVED
            chosen[0] = g
            taken = 1
        elif count > 0:
            # In queue order; with an objective, first drop from the front the requests
            # that cannot meet it even alone, then grow the batch while its oldest request
            # still meets it.
            position = head
            d_position = d_head
            oldest_at = 0.0
            while live + late > 0 and taken < count:
                if live > 0:
                    while flag[fifo[position]] != 0:
                        position += 1
                    g = fifo[position]
                else:
                    while flag[delayed[d_position]] != _DELAYED:
                        d_position += 1
                    g = delayed[d_position]
                if slo < math.inf:
                    if taken == 0 and now + latency[1] > ready[g] + slo:
                        counters[3, owner[g]] += 1
                        taken = -1  # (dropped: marked below, the batch still empty)
                    elif taken == 0:
                        oldest_at = ready[g]
                    elif now + latency[taken + 1] > oldest_at + slo:
                        break
                if flag[g] == 0:
                    live -= 1
                else:
                    late -= 1
                flag[g] = _RESOLVED
                if taken == -1:
                    taken = 0
                    continue
                chosen[taken] = g
                taken += 1

        if taken > 0:
            took = work_ms(latency, sigma, z, batches, taken, chain, identity, 0, chosen)
            end = finish(edges, speed, work, now, took) if slicing else now + took
            worst = 0.0
            for c in range(taken):
                g = chosen[c]
                i = owner[g]
                counters[1, i] += 1
                if rr:
                    waiting[i] -= 1
                    if waiting[i] == 0:
                        remove(sessions.slots, sessions.at, i)
                frame_session[frames] = i
                frame_index[frames] = g - start[i]
                frame_batch[frames] = batches
                frame_arrival[frames] = arrival[g]
                frame_ready[frames] = ready[g]
                frame_latency[frames] = end - ready[g]
                frame_done[frames] = end + post
                worst = max(worst, end - ready[g])
                frames += 1
            batch_start[batches] = now
            batch_end[batches] = end
            batch_size[batches] = taken
            batches += 1
            feedback = worst
            now = end
        else:
            following = wake
            if joined < total:
                following = min(following, order_time[joined])
            now = following

    for i in range(n):
        counters[0, i] = start[i + 1] - start[i]
        counters[4, i] = counters[0, i] - counters[1, i] - counters[3, i]
    return (
        frames, batches, frame_session, frame_index, frame_batch, frame_arrival, frame_ready,
        frame_latency, frame_done, batch_start, batch_end, batch_size, counters, 0,
        np.empty(0, np.int8), np.empty(0, np.float64), np.empty(0, np.float64), np.zeros(6),
    )  # fmt: skip


def run_queue_all(
    scenario: Scenario,
    times: np.ndarray,
    start: np.ndarray,
    latency: np.ndarray,
    timeline: Timeline | None,
    order: Order | None = None,
    spread: tuple[np.ndarray, np.ndarray] | None = None,
    chain: Chain = NO_CHAIN,
) -> tuple[Any, ...]:
    """The compiled loop of a server that queues every frame (``planner.sim.queue_all``)
    on prepared inputs (``spread``: ``batch_time.spread_arrays`` of the scenario, made
    here when not given; ``chain``: the cascade's, ``planner.sim.cascade.prepared``); its
    output, which ``records_of`` reads."""
    if timeline is None:
        edges = speed = work = _NO_TIMELINE
    else:
        edges, speed, work = timeline.edges, timeline.speed, timeline.work
    stages = scenario.engine_stages.as_array()
    if order is None:
        order = arrival_order(times, start, stages)
    queue = queue_params(
        scenario.max_queue_size, scenario.queue_timeout_us, scenario.timeout_action,
        scenario.sessions,
    )  # fmt: skip
    if spread is None:
        spread = spread_arrays(scenario.spread, scenario.seed, times.size)
    policy = POLICIES[scenario.policy]
    return switched(_queue_loop, "queue_kernel", nogil=True)(
        times, start, scenario.duration_ms, latency, policy.pid, policy.by_session,
        scenario.policy_params(), timeline is not None, edges, speed, work, stages, order[1],
        order[2], queue, spread[0], spread[1], chain,
    )  # fmt: skip


queue_loop = switched(_queue_loop, "queue_kernel", nogil=True)
"""The loop for the built-in policies (``run_queue_all`` takes the one for the policies
registered now)."""
