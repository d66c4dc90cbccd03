"""The fast engine: the same semantics as the reference engine, stepping from one GPU
decision to the next instead of from event to event.

Why this is exact: without a finite pool of CPU threads the GPU is the only resource,
and a session holds at most one pending frame — its newest. The time each frame becomes
pending for the GPU is then known in advance (capture + network + pre, each stage a pure
delay), so the state at any instant is, per session, how many of its frames have become
pending (``arrived``, an index into its sorted times) and how many are resolved
(delivered, dropped or overwritten: ``taken``); the pending frame, if any, is the last
one. Between decisions nothing else happens, so the loop jumps straight to the next
decision time: the end of the running batch, else the next frame, else the time the
policy asked to be woken. Overwrites are counted lazily, when a session's pending frame
is resolved, which gives the same totals as counting each frame.

With K CPU threads (SPEC §5.1) pre and post jobs share one FIFO queue, so when a frame
becomes pending depends on the GPU's past decisions (their post jobs take threads). The
loop then steps from event to event instead — a batch completion, a CPU job's end, a
frame reaching the worker, a wake-up — taking the frames in their order of arrival
(sorted once per set of arrivals, outside the loop), with a ring buffer for the queue
(an entry names the session whose pre job it is, so a newer frame replaces the job's
frame and keeps its place), and one ring per stage for the running jobs, which end in
the order they started because every job of a stage takes the same time. The same decision code
serves both, so the policies and the batch bookkeeping are written once.

In both, nothing at a decision looks at every session, so a frame costs about the same at
1,024 sessions as at 16. Frames join a pending set kept from one decision to the next
(``planner.sim.pending``) in the order they become pending — without a pool, an order
sorted once per set of arrivals, outside the loop (``arrival_order``); with one, the order
pre jobs end in, those that end together by session — and the policies find the oldest
frames, the next session in turn or every session in order there; the loop removes the
frames a batch takes or a policy lets expire.

Compiled with Numba through ``planner.sim.jit`` (compiled once per machine and version of the
compiled sources, then loaded from cache), with the policy switch written out from the
registry (``planner.sim.dispatch``). The loop releases the GIL, so the many-run
engine (``planner.sim.ensemble``) runs it on several threads at once.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from planner.sim.arrivals import arrival_order, arrivals
from planner.sim.batch_time import NO_SPREAD, spread_arrays, stretch
from planner.sim.cascade import NO_CHAIN, Chain, prepared, reach_table, work_ms
from planner.sim.decoded import arrived_at_worker, loop_times
from planner.sim.dispatch import by_policy
from planner.sim.pending import add, pending_set, remove
from planner.sim.policies import POLICIES, STATE_SIZE, switched
from planner.sim.queue_all import run_queue_all
from planner.sim.records import Records
from planner.sim.scenario import Scenario
from planner.sim.sharing import Timeline, cotenant_timeline, effective_table, finish, horizon

_NO_TIMELINE = np.zeros(1)
NO_STAGES = np.zeros(4)
"""``WorkerStages.as_array()`` of a worker without network, CPU stages or CPU threads."""
_POST, _PRE = 0, 1  # CPU job kinds (``Records.job_kind``)


def run_fast(scenario: Scenario) -> Records:
    """Simulate ``scenario`` and return its records (identical to ``run_reference``)."""
    arrival = arrivals(scenario)
    sharing = scenario.sharing
    table = effective_table(np.asarray(scenario.latency_ms), sharing, scenario.peak_upto)
    largest = scenario.largest_batch(memory=False)
    reach = horizon(sharing, scenario.duration_ms,
                    *reach_table(scenario, table, largest, stretch(scenario.spread)))  # fmt: skip
    timeline = cotenant_timeline(sharing, scenario.seed, reach)
    sigma, z = spread_arrays(scenario.spread, scenario.seed, arrival.times.size)
    latency, chain = prepared(scenario, np.r_[0.0, table], arrival.times.size)
    times = loop_times(scenario, arrival)
    if scenario.queue == "all":
        records = records_of(
            run_queue_all(
                scenario, times, arrival.start, latency, timeline,
                spread=(sigma, z), chain=chain,
            )
        )  # fmt: skip
    else:
        records = run_prepared(
            times,
            arrival.start,
            scenario.duration_ms,
            latency,
            POLICIES[scenario.policy].pid,
            scenario.policy_params(),
            timeline,
            scenario.engine_stages.as_array(),
            sigma,
            z,
            chain,
        )
    return arrived_at_worker(records, scenario, arrival)


def run_prepared(
    times: np.ndarray,
    start: np.ndarray,
    duration_ms: float,
    latency: np.ndarray,
    pid: int,
    params: np.ndarray,
    timeline: Timeline | None = None,
    stages: np.ndarray | None = None,
    sigma: np.ndarray = NO_SPREAD,
    z: np.ndarray = NO_SPREAD,
    chain: Chain = NO_CHAIN,
) -> Records:
    """Run the compiled loop on prepared inputs: capture times, latency[b], policy id and
    params, ``stages`` (``WorkerStages.as_array()``; None: no stages, as in SPEC §3.3),
    the batch-time spread's ``sigma`` and draws ``z`` (``planner.sim.batch_time``;
    empty: none) and the cascade's ``chain`` (``planner.sim.cascade``)."""
    if timeline is None:
        edges = speed = work = _NO_TIMELINE
        slicing = False
    else:
        edges, speed, work = timeline.edges, timeline.speed, timeline.work
        slicing = True
    if stages is None:
        stages = NO_STAGES
    order = arrival_order(times, start, stages)
    out = fast_loop()(times, start, duration_ms, latency, pid, params, slicing, edges, speed,
                      work, stages, order[0], order[1], order[2], True, sigma, z,
                      chain)  # fmt: skip
    return records_of(out)


def fast_loop() -> Any:
    """The compiled loop for the policies registered now: ``decision_loop`` for the
    built-in ones (``planner.sim.dispatch``)."""
    return switched(_decision_loop, nogil=True)


def records_of(out: tuple[Any, ...]) -> Records:
    """The ``Records`` of the compiled loop's output (trimmed to what was filled)."""
    (
        frames, batches, frame_session, frame_index, frame_batch, frame_arrival, frame_ready,
        frame_latency, frame_done, batch_start, batch_end, batch_size, counters, jobs,
        job_kind, job_ready, job_start, _sums,
    ) = out  # fmt: skip
    return Records(
        frame_session=frame_session[:frames],
        frame_index=frame_index[:frames],
        frame_batch=frame_batch[:frames],
        frame_arrival=frame_arrival[:frames],
        frame_ready=frame_ready[:frames],
        frame_latency=frame_latency[:frames],
        frame_done=frame_done[:frames],
        batch_start=batch_start[:batches],
        batch_end=batch_end[:batches],
        batch_size=batch_size[:batches],
        arrived=counters[0],
        delivered=counters[1],
        overwritten=counters[2],
        expired=counters[3],
        pending=counters[4],
        job_kind=job_kind[:jobs],
        job_ready=job_ready[:jobs],
        job_start=job_start[:jobs],
    )


def _decision_loop(times, start, duration, latency, pid, params, slicing, edges, speed, work, stages, order, order_session, order_time, keep_jobs, sigma, z, chain):  # type: ignore[no-untyped-def]  # noqa: E501  # fmt: skip
    """The simulation proper. ``times`` are capture times; ``stages`` is ``[network_ms,
    pre_ms, post_ms, cpu_workers]``; ``sigma`` and ``z`` the batch-time spread
    (``planner.sim.batch_time.batch_ms``; empty: every batch takes ``latency[b]``);
    ``chain`` the cascade (``planner.sim.cascade.work_ms``). Returns (frames, batches,
    the frame records: session, index, batch, arrival, ready, latency, done; the batch
    records: start, end, size; the per-session counters arrived, delivered, overwritten,
    expired, pending as rows; then jobs and the job records: kind, ready, start, kept only
    when ``keep_jobs``; and ``sums``: thread-ms inside the run on pre and on post jobs,
    their total waits in the queue, and their counts)."""
    n = start.size - 1
    total = times.size  # no run delivers more frames, or runs more batches, than arrive
    network = stages[0]
    pre = stages[1]
    post = stages[2]
    workers = int(stages[3])
    pool = workers > 0 and (pre > 0.0 or post > 0.0)
    # When each frame reaches the worker, and (without a pool of threads, where the pre
    # stage is a pure delay) when it becomes pending for the GPU. Added only when not zero,
    # so the first wave's runs see their arrival times unchanged.
    # (Plain loops rather than array expressions: they compile in a fraction of the time.)
    arrival = times
    if network != 0.0:
        arrival = np.empty(total, np.float64)
        for j in range(total):
            arrival[j] = times[j] + network
    ready = arrival
    if pre != 0.0 and not pool:
        ready = np.empty(total, np.float64)
        for j in range(total):
            ready[j] = arrival[j] + pre

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
    arrived = start[:-1].copy()  # global index of each session's next frame to arrive
    taken = start[:-1].copy()  # global index of each session's first unresolved frame
    stop = start[1:]
    # The frames that take part: those pending for the GPU (or, with a pool, reaching the
    # worker) before the end; the rest of each session's frames count as pending.
    cut = stop.copy()
    for i in range(n):
        edge = arrival if pool else ready
        while cut[i] > start[i] and edge[cut[i] - 1] >= duration:
            cut[i] -= 1
    # The frames pending for the GPU, as the policies see them: a set kept from one
    # decision to the next (``planner.sim.pending``), so that neither the loop nor a policy
    # looks at every session at every decision. Without a pool, frames join it in the
    # order they become pending (``order_session``, ``order_time``: ``arrival_order``);
    # ``joined`` of them have.
    pending = pending_set(n)
    slots = pending.slots  # (taken out once: the loop passes the arrays themselves)
    gpu_at = pending.at  # when each session's frame became pending for the GPU
    joined = 0
    chosen = np.zeros(n, np.int64)
    dropped = np.zeros(n, np.int64)  # the sessions whose frames a policy let expire
    state = np.zeros(STATE_SIZE, np.float64)
    feedback = math.nan
    frames = 0
    batches = 0

    # -- the CPU pool's state (used only with K threads) ----------------------------------
    # Without a pool the order arguments are None, and Numba compiles that case without any
    # of the pool's code: it drops the branches on ``order is not None`` when it knows the
    # argument is None. A plan without CPU threads so compiles about as fast as before
    # they existed, and the pool's code is compiled when a scenario first needs it.
    busy = False
    gpu_end = math.inf
    first_row = 0
    wake_at = math.inf
    reason = False
    q_head = 0  # where the next job is taken from
    q_size = 0
    window = 1
    jobs = 0
    if order is not None:
        size = n
        gpu_frame = np.full(size, -1, np.int64)  # each session's frame pending for the GPU
        late = np.zeros(size, np.int64)  # frames whose pre stage ended after the run
        # The queue: a ring buffer over the first ``window`` slots of an array allocated
        # once for the most jobs that can wait at once (a pre job per session and a post
        # job per delivered frame). Arrays that grow inside the loop made every run
        # several times slower (reference counting of the arrays); a ring over the whole
        # array touched all its memory. The window doubles in place when full. An entry is
        # a session (its pre job, whose frame is ``pre_frame[session]``, so a newer frame
        # replaces it in place) or -1 - row (the post job of that frame record).
        window = 2 * size + 64
        capacity = window  # the window times a power of two, so that it can always double
        while capacity < total + size + 1:
            capacity *= 2
        queue = np.empty(capacity, np.int64)  # only the pages the window reaches are touched
        pre_frame = np.full(size, -1, np.int64)  # the frame of each session's waiting pre job
        ring = workers
        pre_item = np.empty(ring, np.int64)  # running pre jobs, in the order they end
        pre_session = np.empty(ring, np.int64)
        pre_end = np.empty(ring, np.float64)
        pre_head = 0
        pre_count = 0
        post_item = np.empty(ring, np.int64)  # running post jobs (rows), in the order they end
        post_end = np.empty(ring, np.float64)
        post_head = 0
        post_count = 0
        # Frames reach the worker in ``order`` (by time, then session: ``arrival_order``).
        taken_order = 0
        next_arrival = math.inf
        if order.size > 0 and order_time[0] < duration:
            next_arrival = order_time[0]
        # A pre job per frame and a post job per delivery, when the caller keeps them.
        job_capacity = 2 * total if keep_jobs else 0
        job_kind = np.empty(job_capacity, np.int8)
        job_ready = np.empty(job_capacity, np.float64)
        job_start = np.empty(job_capacity, np.float64)
        # Thread-ms inside the run on pre and post jobs, their total waits, their counts.
        sums = np.zeros(6)
        by_session = np.empty(size, np.int64)  # a completed batch's rows by session
        row_of = np.empty(size, np.int64)  # ... and each of its sessions' row
        ending_frame = np.empty(ring, np.int64)  # pre jobs that end at one instant ...
        ending_session = np.empty(ring, np.int64)  # ... by session
    else:
        job_kind = np.empty(0, np.int8)
        job_ready = np.empty(0, np.float64)
        job_start = np.empty(0, np.float64)
        sums = np.zeros(6)

    # Without a pool, the first decision happens when the first frame becomes pending.
    now = math.inf
    if order is None and total > 0:
        now = order_time[0]

    while True:
        if order is not None:
            # The next instant at which anything happens. A CPU job's end matters at its
            # own instant only when a job waits for its thread, or (a pre job) when the GPU
            # is idle and would decide; otherwise it is handled at the next instant (in
            # step 2, with its own time), which skips an instant per frame on a busy GPU.
            t = gpu_end if busy else wake_at
            if next_arrival < t:
                t = next_arrival
            if pre_count > 0 and (q_size > 0 or not busy) and pre_end[pre_head] < t:
                t = pre_end[pre_head]
            if post_count > 0 and q_size > 0 and post_end[post_head] < t:
                t = post_end[post_head]
            if t == math.inf:
                # Nothing else will happen: only post jobs still running remain.
                if post_count == 0:
                    break
                t = post_end[post_head]
            # 1. The running batch completes: its frames' post jobs join the queue, by
            # session (post jobs ready at the same time go in session order).
            if busy and gpu_end == t:
                busy = False
                reason = True
                # (A batch holds a session once: its sessions are sorted, then mapped to
                # rows. A large batch of the oldest frames comes in no session order, and
                # sorting it by insertion cost its size squared; a small one is sorted by
                # insertion, which allocates nothing.)
                members = frames - first_row
                for c in range(members):
                    i = frame_session[first_row + c]
                    row_of[i] = first_row + c
                    by_session[c] = i
                    if members <= 16:
                        position = c
                        while position > 0 and by_session[position - 1] > i:
                            by_session[position] = by_session[position - 1]
                            position -= 1
                        by_session[position] = i
                if members > 16:
                    by_session[:members].sort()
                for c in range(members):
                    by_session[c] = row_of[by_session[c]]
                for c in range(members):
                    row = by_session[c]
                    if post == 0.0:
                        frame_done[row] = t
                        continue
                    if q_size == window:  # full: the wrapped part moves past the old end
                        for j in range(q_head):
                            queue[window + j] = queue[j]
                        window *= 2
                    tail = q_head + q_size
                    queue[tail - window if tail >= window else tail] = -1 - row
                    q_size += 1
            # 2. CPU jobs that ended by now: a pre job's frame becomes pending for the GPU
            # (at the job's end). Jobs of one stage end in the order they started; those
            # that end at one instant join the pending set by session (their frames tie).
            while pre_count > 0 and pre_end[pre_head] <= t:
                ended = pre_end[pre_head]
                ending = 0
                while pre_count > 0 and pre_end[pre_head] == ended:
                    position = ending
                    while position > 0 and ending_session[position - 1] > pre_session[pre_head]:
                        ending_session[position] = ending_session[position - 1]
                        ending_frame[position] = ending_frame[position - 1]
                        position -= 1
                    ending_session[position] = pre_session[pre_head]
                    ending_frame[position] = pre_item[pre_head]
                    ending += 1
                    pre_head = pre_head + 1 if pre_head + 1 < ring else 0
                    pre_count -= 1
                for c in range(ending):
                    g = ending_frame[c]
                    i = ending_session[c]
                    if ended >= duration:
                        late[i] += 1
                    else:
                        if gpu_frame[i] >= 0:
                            counters[2, i] += 1
                        gpu_frame[i] = g
                        add(slots, gpu_at, i, ended)
                        reason = True
            while post_count > 0 and post_end[post_head] <= t:
                frame_done[post_item[post_head]] = post_end[post_head]
                post_head = post_head + 1 if post_head + 1 < ring else 0
                post_count -= 1
            # 3. Frames that reach the worker now, in session order.
            while next_arrival == t:
                g = order[taken_order]
                i = order_session[taken_order]
                taken_order += 1
                next_arrival = math.inf
                if taken_order < order.size and order_time[taken_order] < duration:
                    next_arrival = order_time[taken_order]
                if pre == 0.0:
                    if gpu_frame[i] >= 0:
                        counters[2, i] += 1
                    gpu_frame[i] = g
                    add(slots, gpu_at, i, t)
                    reason = True
                elif pre_frame[i] >= 0:
                    # Newest only: the newer frame takes the waiting job's place.
                    counters[2, i] += 1
                    pre_frame[i] = g
                elif (
                    q_size == 0
                    and pre_count + post_count < workers
                    and not (next_arrival == t and order_session[taken_order] == i)
                ):
                    # A free thread and no one queued: the job starts now, as step 4 would
                    # start it (unless the session's next frame arrives at this same
                    # instant and replaces it first).
                    if keep_jobs:
                        job_kind[jobs] = _PRE
                        job_ready[jobs] = t
                        job_start[jobs] = t
                        jobs += 1
                    sums[0] += min(t + pre, duration) - t
                    sums[4] += 1.0
                    place = pre_head + pre_count
                    place = place - ring if place >= ring else place
                    pre_item[place] = g
                    pre_session[place] = i
                    pre_end[place] = t + pre
                    pre_count += 1
                else:
                    pre_frame[i] = g
                    if q_size == window:  # full: the wrapped part moves past the old end
                        for j in range(q_head):
                            queue[window + j] = queue[j]
                        window *= 2
                    tail = q_head + q_size
                    queue[tail - window if tail >= window else tail] = i
                    q_size += 1
            # 4. Free threads take jobs, first in first out; after the end only post jobs
            # start (a pre job still waiting then keeps its frame pending).
            while pre_count + post_count < workers and q_size > 0:
                entry = queue[q_head]
                q_head = q_head + 1 if q_head + 1 < window else 0
                q_size -= 1
                if entry >= 0:
                    g = pre_frame[entry]
                    pre_frame[entry] = -1
                    if t >= duration:
                        late[entry] += 1
                        continue
                    if keep_jobs:
                        job_kind[jobs] = _PRE
                        job_ready[jobs] = arrival[g]
                    sums[0] += min(t + pre, duration) - t
                    sums[2] += t - arrival[g]
                    sums[4] += 1.0
                    place = pre_head + pre_count
                    place = place - ring if place >= ring else place
                    pre_item[place] = g
                    pre_session[place] = entry
                    pre_end[place] = t + pre
                    pre_count += 1
                else:
                    row = -1 - entry
                    if keep_jobs:
                        job_kind[jobs] = _POST
                        job_ready[jobs] = batch_end[frame_batch[row]]
                    if t < duration:
                        sums[1] += min(t + post, duration) - t
                    sums[3] += t - batch_end[frame_batch[row]]
                    sums[5] += 1.0
                    place = post_head + post_count
                    place = place - ring if place >= ring else place
                    post_item[place] = row
                    post_end[place] = t + post
                    post_count += 1
                if keep_jobs:
                    job_start[jobs] = t
                    jobs += 1
            if not busy and t == wake_at:
                reason = True
                wake_at = math.inf
            # 5. The policy decides, if the GPU is free and something changed.
            if busy or not reason or t >= duration:
                continue
            reason = False
            now = t
        else:
            if not now < duration:
                break
            # Every frame pending up to and including `now` joins before the decision.
            while joined < total and order_time[joined] <= now:
                i = order_session[joined]
                arrived[i] += 1
                add(slots, gpu_at, i, order_time[joined])
                joined += 1

        # The policy: written out as a switch of the registry's kernels, each called
        # directly (``planner.sim.dispatch``); a kernel called directly costs nothing.
        out = by_policy(pid, now, pending, latency, params, state, feedback, chosen, dropped)
        count, wake, gone = out
        feedback = math.nan
        for c in range(gone):
            i = dropped[c]
            remove(slots, gpu_at, i)
            counters[3, i] += 1
            if order is not None:
                gpu_frame[i] = -1
            else:
                counters[2, i] += arrived[i] - 1 - taken[i]
                taken[i] = arrived[i]

        if count > 0:
            if order is not None:  # the k-th batch's work, of the frames it takes
                took = work_ms(latency, sigma, z, batches, count, chain, gpu_frame, 0, chosen)
            else:
                took = work_ms(latency, sigma, z, batches, count, chain, arrived, -1, chosen)
            end = finish(edges, speed, work, now, took) if slicing else now + took
            worst = 0.0
            for c in range(count):
                i = chosen[c]
                if order is not None:
                    newest = gpu_frame[i]
                    became = gpu_at[i]
                    gpu_frame[i] = -1
                else:
                    newest = arrived[i] - 1
                    became = ready[newest]
                    counters[2, i] += newest - taken[i]
                    taken[i] = arrived[i]
                remove(slots, gpu_at, i)
                counters[1, i] += 1
                frame_session[frames] = i
                frame_index[frames] = newest - start[i]
                frame_batch[frames] = batches
                frame_arrival[frames] = arrival[newest]
                frame_ready[frames] = became
                frame_latency[frames] = end - became
                frame_done[frames] = end + post  # with a pool: set when its post job ends
                worst = max(worst, end - became)
                frames += 1
            batch_start[batches] = now
            batch_end[batches] = end
            batch_size[batches] = count
            batches += 1
            feedback = worst
            if order is not None:
                busy = True
                gpu_end = end
                first_row = frames - count
                wake_at = math.inf
            else:
                now = end  # the next decision is when this batch completes
        elif order is not None:
            wake_at = wake
        else:
            following = wake
            if joined < total:
                following = min(following, order_time[joined])
            now = following

    for i in range(n):
        counters[0, i] = stop[i] - start[i]
        if order is not None:
            # Still pending for the GPU, in a pre stage that ended after the run, or
            # reaching the worker after it; jobs still queued are counted below.
            counters[4, i] = late[i] + (stop[i] - cut[i]) + (1 if gpu_frame[i] >= 0 else 0)
        else:
            # Frames the loop did not reach (after the last batch ran past the end) still
            # count: the newest is pending, the ones before it were overwritten.
            last = cut[i] - 1
            counters[4, i] = stop[i] - cut[i]
            if last >= taken[i]:
                counters[4, i] += 1
                counters[2, i] += last - taken[i]
    if order is not None:
        for position in range(q_size):
            entry = queue[(q_head + position) % window]
            if entry >= 0:
                counters[4, entry] += 1  # a pre job that never started
    return (
        frames, batches, frame_session, frame_index, frame_batch, frame_arrival, frame_ready,
        frame_latency, frame_done, batch_start, batch_end, batch_size, counters, jobs,
        job_kind, job_ready, job_start, sums,
    )  # fmt: skip


decision_loop = fast_loop()
"""The loop for the built-in policies, compiled once per machine and version of the
compiled sources (``fast_loop`` gives the one for the policies registered now)."""
