"""The reference engine: the plainest correct discrete-event loop for SPEC §3.3 and §5.1.

A heap of events ordered by ``(time, priority, sequence)``: at one instant a batch
completion (priority 0) comes first, then CPU-job completions (1), then frames reaching
the worker (2); after all events of that instant, free CPU threads take jobs from the
queue, and then the GPU policy decides once, when the GPU is free — so a frame that
becomes pending exactly when the GPU frees is eligible for the next batch. The sequence
number, owned by the loop, makes the order total without ever comparing sessions or
frames.

The worker beyond the GPU (SPEC §5.1): a frame captured at t arrives at
``t + network_ms``. With unlimited CPU threads (``cpu_workers`` 0) its pre stage is a
pure delay of ``pre_ms`` and its post stage one of ``post_ms``. With K threads both are
jobs in one FIFO queue, ordered by the time the job became ready, then post before pre,
then session; a session's pre job that has not started is replaced by its newer frame,
which keeps the older job's place. A stage of 0 ms makes no job. After the end of the run
no pre job starts and no batch is dispatched; frames still on their way count as
pending, and post jobs of delivered frames run to completion.

It is slow on purpose: the fast engine (``planner.sim.engine_fast``) must produce exactly the
same records, and the tests and ``planner bench`` compare the two.
"""

from __future__ import annotations

import heapq
import itertools
import math
from dataclasses import dataclass

import numpy as np

from planner.sim.arrivals import Arrivals, arrivals
from planner.sim.batch_time import spread_arrays, stretch
from planner.sim.cascade import prepared, reach_table, reference_ms
from planner.sim.decode import decoded_times_reference
from planner.sim.policies import POLICIES, decide, initial_state
from planner.sim.records import Records
from planner.sim.scenario import Scenario
from planner.sim.sharing import cotenant_timeline, effective_table, finish, horizon

COMPLETE, CPU_DONE, ARRIVE, WAKE = 0, 1, 2, 3
POST, PRE = 0, 1  # job kinds, in the order ties between them are broken


@dataclass
class _Job:
    """A CPU job in the queue. ``key`` orders the queue; a pre job that is replaced by its
    session's newer frame keeps its key (its place) and takes the new frame."""

    key: tuple[float, int, int, int]  # (ready time, kind, session, sequence)
    kind: int
    session: int
    item: int  # pre: the frame's index in its session; post: its row in the frame records
    ready: float  # when the frame it carries joined the queue


def run_reference(scenario: Scenario) -> Records:
    """Simulate ``scenario`` event by event and return its records."""
    if scenario.queue == "all":
        return run_reference_queue_all(scenario)
    n = scenario.sessions
    duration = scenario.duration_ms
    capture = arrivals(scenario)
    stages = scenario.engine_stages
    network, pre, post = scenario.stages.network_ms, stages.pre_ms, stages.post_ms
    pool = scenario.cpu_pool
    reach_worker = _reaching(scenario, capture, replaces=True)
    table = effective_table(np.asarray(scenario.latency_ms), scenario.sharing, scenario.peak_upto)
    reach = horizon(scenario.sharing, duration,
                    *reach_table(scenario, table, n, stretch(scenario.spread)))  # fmt: skip
    timeline = cotenant_timeline(scenario.sharing, scenario.seed, reach)
    sigma, z = spread_arrays(scenario.spread, scenario.seed, capture.times.size)
    # latency[b] for a batch of b (with a cascade: as the policies see the whole chain)
    latency, chain = prepared(scenario, np.r_[0.0, table], capture.times.size)
    params = scenario.policy_params()
    pid = POLICIES[scenario.policy].pid
    state = initial_state()

    sequence = itertools.count()
    events: list[tuple[float, int, int, int, int, int]] = []
    for session in range(n):
        for k in range(capture.of(session).size):
            at = float(reach_worker[int(capture.start[session]) + k])
            heapq.heappush(events, (at, ARRIVE, next(sequence), session, k, 0))

    waiting: dict[int, tuple[int, float, float]] = {}  # session -> (frame, arrival, ready)
    queue: list[_Job] = []  # CPU jobs not started
    queued_pre: dict[int, _Job] = {}  # session -> its pre job in the queue
    free = stages.cpu_workers
    arrived = np.diff(capture.start)
    delivered = np.zeros(n, np.int64)
    overwritten = np.zeros(n, np.int64)
    expired = np.zeros(n, np.int64)
    late = np.zeros(n, np.int64)  # frames still on their way at the end: pending
    frames: list[tuple[int, int, int, float, float, float]] = []
    done: list[float] = []
    batches: list[tuple[float, float, int]] = []
    jobs: list[tuple[int, float, float]] = []
    running: list[int] = []  # rows of the frames in the running batch
    gpu_busy = False
    wake_at = math.inf  # the time the last decision asked to be woken at
    feedback = math.nan  # worst latency of the batch that just completed
    reason_to_decide = False

    def arrival_of(session: int, k: int) -> float:
        return float(capture.of(session)[k]) + network

    def ready_for_gpu(session: int, k: int, t: float) -> None:
        """The frame becomes pending for the GPU, replacing its session's pending one."""
        if session in waiting:
            overwritten[session] += 1
        waiting[session] = (k, arrival_of(session, k), t)

    while events:
        t, kind, _, a, b, c = heapq.heappop(events)
        if kind == COMPLETE:
            gpu_busy = False
            reason_to_decide = True
            for row in sorted(running, key=lambda r: frames[r][0]):  # post jobs by session
                if post == 0:
                    done[row] = t
                elif not pool:
                    done[row] = t + post
                else:
                    key = (t, POST, frames[row][0], next(sequence))
                    queue.append(_Job(key, POST, frames[row][0], row, t))
            running = []
        elif kind == CPU_DONE:
            if pool:
                free += 1
            if a == POST:
                done[b] = t
            elif t >= duration:
                late[b] += 1  # its pre stage ended after the run: pending
            else:
                ready_for_gpu(b, c, t)
                reason_to_decide = True
        elif kind == ARRIVE:
            if t >= duration:
                late[a] += 1  # reached the worker after the run: pending
            elif pre == 0:
                ready_for_gpu(a, b, t)
                reason_to_decide = True
            elif not pool:
                heapq.heappush(events, (t + pre, CPU_DONE, next(sequence), PRE, a, b))
            elif a in queued_pre:
                job = queued_pre[a]  # newest only: the newer frame takes the job's place
                overwritten[a] += 1
                job.item, job.ready = b, t
            else:
                job = _Job((t, PRE, a, next(sequence)), PRE, a, b, t)
                queue.append(job)
                queued_pre[a] = job
        elif kind == WAKE and t == wake_at:
            reason_to_decide = True
        if events and events[0][0] == t:
            continue  # threads take jobs and the GPU decides only after every event of t

        while pool and free > 0:
            startable = [j for j in queue if j.kind == POST or t < duration]
            if not startable:
                break
            job = min(startable, key=lambda j: j.key)
            queue.remove(job)
            free -= 1
            jobs.append((job.kind, job.ready, t))
            if job.kind == PRE:
                del queued_pre[job.session]
                heapq.heappush(events, (t + pre, CPU_DONE, next(sequence), PRE, job.session,
                                        job.item))  # fmt: skip
            else:
                heapq.heappush(events, (t + post, CPU_DONE, next(sequence), POST, job.item, 0))

        if not reason_to_decide or gpu_busy or t >= duration:
            continue
        reason_to_decide = False

        pending = np.full(n, math.inf)
        for session, (_, _, ready) in waiting.items():
            pending[session] = ready
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
                heapq.heappush(events, (wake, WAKE, next(sequence), -1, -1, 0))
            continue
        # The batch's work in exclusive-card ms; co-tenants stretch it (``finish``).
        frames_taken = [int(capture.start[s]) + waiting[s][0] for s in chosen[:count].tolist()]
        took = reference_ms(latency, sigma, z, len(batches), chain, frames_taken)
        end = (
            t + took
            if timeline is None
            else finish(timeline.edges, timeline.speed, timeline.work, t, took)
        )
        worst = 0.0
        for served in chosen[:count].tolist():
            k, arrived_at, ready = waiting.pop(served)
            delivered[served] += 1
            running.append(len(frames))
            frames.append((served, k, len(batches), arrived_at, ready, end - ready))
            done.append(math.nan)
            worst = max(worst, end - ready)
        batches.append((t, end, int(count)))
        feedback = worst
        gpu_busy = True
        heapq.heappush(events, (end, COMPLETE, next(sequence), -1, -1, 0))

    pending = late.copy()
    for session in waiting:
        pending[session] += 1
    for job in queue:
        if job.kind == PRE:
            pending[job.session] += 1
    return Records(
        frame_session=np.array([f[0] for f in frames], np.int64),
        frame_index=np.array([f[1] for f in frames], np.int64),
        frame_batch=np.array([f[2] for f in frames], np.int64),
        frame_arrival=np.array([f[3] for f in frames], np.float64),
        frame_ready=np.array([f[4] for f in frames], np.float64),
        frame_latency=np.array([f[5] for f in frames], np.float64),
        frame_done=np.array(done, np.float64),
        batch_start=np.array([b[0] for b in batches], np.float64),
        batch_end=np.array([b[1] for b in batches], np.float64),
        batch_size=np.array([b[2] for b in batches], np.int64),
        arrived=arrived.astype(np.int64),
        delivered=delivered,
        overwritten=overwritten,
        expired=expired,
        pending=pending,
        job_kind=np.array([j[0] for j in jobs], np.int8),
        job_ready=np.array([j[1] for j in jobs], np.float64),
        job_start=np.array([j[2] for j in jobs], np.float64),
    )


def _reaching(scenario: Scenario, capture: Arrivals, replaces: bool) -> np.ndarray:
    """When each frame is ready for the CPU stages: capture + network, or with decoder
    engines, when it leaves them (``planner.sim.decode``, event by event); ``replaces``:
    whether a JPEG frame waiting for an engine is replaced by its session's newer one."""
    network = scenario.stages.network_ms
    decoding = scenario.decode
    if decoding is None or decoding.on_cpu:
        return capture.times + network
    return decoded_times_reference(
        decoding, capture.times, capture.start, network, scenario.duration_ms,
        replaces and not decoding.every_frame,
    )  # fmt: skip


def run_reference_queue_all(scenario: Scenario) -> Records:
    """Simulate a server that queues every frame (``queue = all``: the semantics are in
    ``planner.sim.queue_all``) event by event: a heap of requests joining and batches
    completing, and two plain lists for the queue, within the timeout and delayed."""
    n = scenario.sessions
    duration = scenario.duration_ms
    capture = arrivals(scenario)
    stages = scenario.engine_stages
    network, pre, post = scenario.stages.network_ms, stages.pre_ms, stages.post_ms
    reach_worker = _reaching(scenario, capture, replaces=False)
    table = effective_table(np.asarray(scenario.latency_ms), scenario.sharing, scenario.peak_upto)
    largest = scenario.largest_batch(memory=False)
    reach = horizon(scenario.sharing, duration,
                    *reach_table(scenario, table, largest, stretch(scenario.spread)))  # fmt: skip
    timeline = cotenant_timeline(scenario.sharing, scenario.seed, reach)
    sigma, z = spread_arrays(scenario.spread, scenario.seed, capture.times.size)
    latency, chain = prepared(scenario, np.r_[0.0, table], capture.times.size)
    params = scenario.policy_params()
    decide_queued = POLICIES[scenario.policy].queue_reference
    max_size = math.inf if scenario.max_queue_size is None else scenario.max_queue_size
    timeout = math.inf if scenario.queue_timeout_us is None else scenario.queue_timeout_us / 1e3
    delay = scenario.timeout_action == "delay"

    sequence = itertools.count()
    events: list[tuple[float, int, int, int, int]] = []
    for session in range(n):
        for k in range(capture.of(session).size):
            at = float(reach_worker[int(capture.start[session]) + k]) + pre
            heapq.heappush(events, (at, ARRIVE, session, k, next(sequence)))
    live: list[tuple[float, int, int]] = []  # (ready, session, frame), oldest first
    delayed: list[tuple[float, int, int]] = []
    delivered = np.zeros(n, np.int64)
    expired = np.zeros(n, np.int64)
    frames: list[tuple[int, int, int, float, float, float]] = []
    batches: list[tuple[float, float, int]] = []
    gpu_busy = False
    wake_at = math.inf
    feedback = math.nan
    reason = False
    policy_state: dict[str, float] = {}  # the policy's memory, through the run

    while events:
        t, kind, a, b, _ = heapq.heappop(events)
        if t >= duration:
            break  # nothing joins or starts after the end
        if kind == COMPLETE:
            gpu_busy = False
            reason = True
        elif kind == ARRIVE:
            if len(live) + len(delayed) >= max_size:
                expired[a] += 1  # rejected: the queue is full
            else:
                live.append((t, a, b))
            reason = True
        elif kind == WAKE and t == wake_at:
            reason = True
        if events and events[0][0] == t:
            continue  # the GPU decides only after every event of t
        if not reason or gpu_busy:
            continue
        reason = False
        wake_at = math.inf

        while live and t >= live[0][0] + timeout:
            request = live.pop(0)
            if delay:
                delayed.append(request)
            else:
                expired[request[1]] += 1
        queue = live + delayed  # the order the batcher takes requests in
        chosen, wake, drop = decide_queued(t, queue, latency, params, n, policy_state, feedback)
        feedback = math.nan
        for gone in drop:
            expired[gone[1]] += 1
            (live if gone in live else delayed).remove(gone)
        if wake < math.inf:
            wake_at = wake
            heapq.heappush(events, (wake_at, WAKE, -1, -1, next(sequence)))
        if not chosen:
            continue
        for request in chosen:
            (live if request in live else delayed).remove(request)
        taken = [int(capture.start[session]) + k for _, session, k in chosen]
        took = reference_ms(latency, sigma, z, len(batches), chain, taken)
        end = (
            t + took
            if timeline is None
            else finish(timeline.edges, timeline.speed, timeline.work, t, took)
        )
        for ready, session, k in chosen:
            delivered[session] += 1
            arrived_at = float(capture.of(session)[k]) + network
            frames.append((session, k, len(batches), arrived_at, ready, end - ready))
        batches.append((t, end, len(chosen)))
        feedback = max(end - ready for ready, _, _ in chosen)
        gpu_busy = True
        heapq.heappush(events, (end, COMPLETE, -1, -1, next(sequence)))

    arrived = np.diff(capture.start).astype(np.int64)
    return Records(
        frame_session=np.array([f[0] for f in frames], np.int64),
        frame_index=np.array([f[1] for f in frames], np.int64),
        frame_batch=np.array([f[2] for f in frames], np.int64),
        frame_arrival=np.array([f[3] for f in frames], np.float64),
        frame_ready=np.array([f[4] for f in frames], np.float64),
        frame_latency=np.array([f[5] for f in frames], np.float64),
        frame_done=np.array([batches[f[2]][1] + post for f in frames], np.float64),
        batch_start=np.array([b[0] for b in batches], np.float64),
        batch_end=np.array([b[1] for b in batches], np.float64),
        batch_size=np.array([b[2] for b in batches], np.int64),
        arrived=arrived,
        delivered=delivered,
        overwritten=np.zeros(n, np.int64),
        expired=expired,
        pending=arrived - delivered - expired,
        job_kind=np.zeros(0, np.int8),
        job_ready=np.zeros(0, np.float64),
        job_start=np.zeros(0, np.float64),
    )
