"""The reference worker: one scenario served in real time on the local device (SPEC §5.2).

Three kinds of threads share one lock and one condition:

- the **arrival thread** walks the scenario's schedule (``planner.validate.worker.schedule``, the
  simulator's own capture times) and sleeps until each arrival, on a monotonic clock; it
  never spins. The time it actually handled an arrival is recorded, so each frame's
  lateness is known (and reported, not assumed away);
- **CPU threads** (``cpu_workers`` of them) take jobs from one queue, first in first out
  by the time the job became ready, post jobs before pre jobs at equal times, then by
  session. A session's pre job that has not started is replaced by its newer frame, which
  takes the job's place (the older frame is overwritten). A stage of 0 ms makes no job;
- the **device loop** (the calling thread) decides whenever the device is free and
  something changed (a frame became pending, a batch completed, a policy's wake-up time
  came): it asks ``planner.sim.policies.decide`` — the very function the simulator calls, with
  the same arguments — for the next batch, runs it through the backend with the device
  synchronised, and hands each frame to its post job.

Newest only, as in the simulator: a frame that becomes pending for the device replaces
its session's pending one (overwritten). The drain rule too: nothing starts a pre job or
a batch at or after the end; a running pre job finishes and its frame stays pending; a
batch dispatched before the end completes and its post jobs run, after the end if need
be, and its frames are delivered.

Times are milliseconds since the start of the run on ``time.perf_counter_ns`` (monotonic).
``serve`` returns a ``WorkerRun`` with every frame's record.
"""

from __future__ import annotations

import heapq
import itertools
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from planner.errors import BadInput
from planner.sim.policies import POLICIES, decide, initial_state
from planner.sim.scenario import Scenario
from planner.validate.worker.backends import Backend
from planner.validate.worker.frames import DELIVERED, EXPIRED, OVERWRITTEN, WorkerRun, empty_run
from planner.validate.worker.schedule import schedule

POST, PRE = 0, 1  # job kinds, in the order ties between them are broken
LEAD_MS = 50.0
"""The run starts this long after ``serve`` is called, so every thread is waiting."""
TICK_S = 0.25
"""How often the device loop calls ``on_tick`` while it runs (a progress bar)."""

Tick = Callable[[float], None]
"""Called from the device loop with the fraction of the run done; it may raise to stop."""


def worker_problems(scenario: Scenario) -> list[str]:
    """Why the reference worker cannot serve ``scenario`` as it is (empty: it can)."""
    problems = []
    if not scenario.sharing.kind.as_measured:
        problems.append(
            f"the reference worker uses this device as it is; {scenario.sharing.mode} is one "
            "of the simulator's models of sharing (run the worker under real sharing instead)"
        )
    stages = scenario.stages
    if (stages.pre_ms > 0 or stages.post_ms > 0) and stages.cpu_workers < 1:
        problems.append(
            "the reference worker runs CPU work on a pool of threads: give cpu_workers of 1 or more"
        )
    return problems


@dataclass(order=True)
class _Job:
    """A CPU job; ``key`` orders the queue. A replaced pre job keeps its key (its place)
    and takes the newer frame."""

    key: tuple[float, int, int, int]
    kind: int = field(compare=False)
    session: int = field(compare=False)
    row: int = field(compare=False)  # the frame's row in the records


class _State:
    """Everything the threads share, guarded by ``cond``."""

    def __init__(self, scenario: Scenario, backend: Backend) -> None:
        self.scenario = scenario
        self.backend = backend
        plan = schedule(scenario)
        self.plan = plan
        self.run = empty_run(scenario, plan.session, plan.frame)
        np.copyto(self.run.capture_ms, plan.capture_ms)
        np.copyto(self.run.arrival_ms, plan.arrival_ms)
        self.cond = threading.Condition()
        self.duration = scenario.duration_ms
        self.waiting: dict[int, int] = {}  # session -> row of its frame pending for the device
        self.queue: list[_Job] = []
        self.queued_pre: dict[int, _Job] = {}  # session -> its pre job not yet started
        self.inputs: dict[int, object] = {}  # row -> the model input of a pending frame
        self.outputs: dict[int, object] = {}  # batch -> outputs, until its post jobs ran
        self.posts_left: dict[int, int] = {}  # batch -> post jobs not finished
        self.rows_in_batch: dict[int, int] = {}  # row -> its position in its batch
        self.sequence = itertools.count()
        self.changed = False  # a reason for the device loop to decide
        self.arrivals_done = False
        self.device_done = False
        self.stopping = False
        self.error: BaseException | None = None
        self.wake_arrivals = threading.Event()  # set to end the arrival thread's sleep
        self.t0 = 0


def serve(
    scenario: Scenario,
    backend: Backend,
    *,
    on_tick: Tick | None = None,
) -> WorkerRun:
    """Serve ``scenario`` for real with ``backend`` and return every frame's record.

    Raises BadInput when the worker cannot serve the scenario (``worker_problems``). What
    the backend raises (out of memory, a model that fails) stops every thread and is
    raised again; so is ``KeyboardInterrupt`` (Ctrl-C) and whatever ``on_tick`` raises.
    """
    problems = worker_problems(scenario)
    if problems:
        raise BadInput(problems)
    state = _State(scenario, backend)
    _warm_policy(scenario)
    threads = [threading.Thread(target=_guard, args=(state, _arrivals), daemon=True,
                                name="worker-arrivals")]  # fmt: skip
    stages = scenario.stages
    if stages.pre_ms > 0 or stages.post_ms > 0:
        threads += [
            threading.Thread(target=_guard, args=(state, _cpu), daemon=True, name=f"worker-cpu-{i}")
            for i in range(stages.cpu_workers)
        ]
    state.t0 = time.perf_counter_ns() + int(LEAD_MS * 1e6)
    for thread in threads:
        thread.start()
    finished = False
    try:
        _device(state, on_tick)
        finished = True
    finally:
        with state.cond:
            state.device_done = True
            if not finished or state.error is not None:
                state.stopping = True  # stopped early: let every thread go at once
                state.wake_arrivals.set()
            state.cond.notify_all()
        for thread in threads:
            thread.join()
    if state.error is not None:
        raise state.error
    return state.run


def _warm_policy(scenario: Scenario) -> None:
    """Call the policy once on throw-away state before the clock starts: the first call
    of a compiled function loads (or compiles) its machine code, which takes from a
    fraction of a second to seconds and must not land inside the run."""
    n = scenario.sessions
    pending = np.full(n, math.inf)
    pending[0] = 0.0
    latency = np.r_[0.0, np.asarray(scenario.latency_ms, np.float64)]
    decide(
        POLICIES[scenario.policy].pid, 0.0, pending, latency, scenario.policy_params(),
        initial_state(), math.nan, np.zeros(n, np.int64), np.zeros(n, np.bool_),
    )  # fmt: skip


def _now(state: _State) -> float:
    return (time.perf_counter_ns() - state.t0) / 1e6


def _guard(state: _State, body: Callable[[_State], None]) -> None:
    """Run a thread's body; an error stops the whole run and reaches ``serve``."""
    try:
        body(state)
    except BaseException as exc:  # handed to the caller's thread, raised there
        with state.cond:
            if state.error is None:
                state.error = exc
            state.stopping = True
            state.wake_arrivals.set()
            state.cond.notify_all()


# -- arrivals -------------------------------------------------------------------------


def _arrivals(state: _State) -> None:
    run, plan = state.run, state.plan
    order = plan.order.tolist()
    arrival = plan.arrival_ms
    i = 0
    while i < len(order):
        due = float(arrival[order[i]])
        if due >= state.duration:
            break  # reaches the worker after the run: pending, never handled
        wait = due - _now(state)
        if wait > 0:
            state.wake_arrivals.wait(wait / 1000.0)  # sleeps (no spinning) until the arrival is due
        with state.cond:
            if state.stopping:
                return
            now = _now(state)
            # Every arrival due by now, in the engines' order (time, session, frame).
            while i < len(order):
                row = order[i]
                if not (arrival[row] <= now and arrival[row] < state.duration):
                    break
                run.arrived_ms[row] = now
                _arrive(state, row, now)
                i += 1
            state.cond.notify_all()
    with state.cond:
        state.arrivals_done = True
        state.cond.notify_all()


def _arrive(state: _State, row: int, now: float) -> None:
    """A frame reached the worker (the lock is held)."""
    run = state.run
    session = int(run.session[row])
    if state.scenario.stages.pre_ms <= 0:
        _pending(state, row, now, state.backend.input(session, int(run.frame[row])))
        return
    job = state.queued_pre.get(session)
    if job is not None:
        # Newest only: the newer frame takes the waiting job's place in the queue.
        run.status[job.row] = OVERWRITTEN
        job.row = row
        return
    job = _Job((now, PRE, session, next(state.sequence)), PRE, session, row)
    heapq.heappush(state.queue, job)
    state.queued_pre[session] = job


def _pending(state: _State, row: int, now: float, model_input: object) -> None:
    """A frame becomes pending for the device, replacing its session's pending one."""
    run = state.run
    session = int(run.session[row])
    older = state.waiting.get(session)
    if older is not None:
        run.status[older] = OVERWRITTEN
        state.inputs.pop(older, None)
    state.waiting[session] = row
    state.inputs[row] = model_input
    run.ready_ms[row] = now
    state.changed = True


# -- the CPU pool -----------------------------------------------------------------------


def _take(state: _State, now: float) -> _Job | None:
    """The first job in the queue that may start now (no pre job at or after the end)."""
    if not state.queue:
        return None
    if now < state.duration:
        return heapq.heappop(state.queue)
    posts = [job for job in state.queue if job.kind == POST]
    if not posts:
        return None
    job = min(posts)
    state.queue.remove(job)
    heapq.heapify(state.queue)
    return job


def _cpu(state: _State) -> None:
    run, backend = state.run, state.backend
    while True:
        with state.cond:
            while True:
                if state.stopping:
                    return
                now = _now(state)
                job = _take(state, now)
                if job is not None:
                    break
                if state.arrivals_done and state.device_done:
                    return  # nothing will be queued again
                timeout = (state.duration - now) / 1000.0 if now < state.duration else None
                state.cond.wait(timeout)
            if job.kind == PRE:
                del state.queued_pre[job.session]
                run.pre_start_ms[job.row] = now
                outputs = None
            else:
                run.post_start_ms[job.row] = now
                outputs = state.outputs[int(run.batch[job.row])]
        if job.kind == PRE:
            model_input = backend.pre(job.session, int(run.frame[job.row]))
        else:
            backend.post(outputs, state.rows_in_batch[job.row])
        with state.cond:
            now = _now(state)
            if job.kind == PRE:
                run.pre_end_ms[job.row] = now
                if now < state.duration:
                    _pending(state, job.row, now, model_input)
                # else: finished after the end of the run, so its frame stays pending
            else:
                run.post_end_ms[job.row] = now
                batch = int(run.batch[job.row])
                state.posts_left[batch] -= 1
                if state.posts_left[batch] == 0:
                    del state.posts_left[batch], state.outputs[batch]
            state.cond.notify_all()


# -- the device loop --------------------------------------------------------------------


def _device(state: _State, on_tick: Tick | None) -> None:
    scenario, run, backend = state.scenario, state.run, state.backend
    n = scenario.sessions
    latency = np.r_[0.0, np.asarray(scenario.latency_ms, np.float64)]
    params = scenario.policy_params()
    pid = POLICIES[scenario.policy].pid
    policy_state = initial_state()
    feedback = math.nan
    wake = math.inf
    batch = 0
    post = scenario.stages.post_ms > 0
    next_tick = time.monotonic() + TICK_S
    while True:
        if on_tick is not None and time.monotonic() >= next_tick:
            on_tick(min(max(_now(state) / state.duration, 0.0), 1.0))
            next_tick = time.monotonic() + TICK_S
        chosen_rows: list[int] = []
        with state.cond:
            while True:
                if state.stopping:
                    return
                now = _now(state)
                if now >= state.duration:
                    return  # no batch is dispatched at or after the end
                if state.changed or now >= wake:
                    state.changed = False
                    pending = np.full(n, math.inf)
                    for session, row in state.waiting.items():
                        pending[session] = run.ready_ms[row]
                    chosen = np.zeros(n, np.int64)
                    dropped = np.zeros(n, np.bool_)
                    count, wake_at = decide(
                        pid, now, pending, latency, params, policy_state, feedback, chosen,
                        dropped,
                    )  # fmt: skip
                    feedback = math.nan
                    wake = math.inf
                    for session in np.flatnonzero(dropped).tolist():
                        row = state.waiting.pop(session)
                        run.status[row] = EXPIRED
                        state.inputs.pop(row, None)
                    if count > 0:
                        chosen_rows = [state.waiting.pop(int(s)) for s in chosen[:count]]
                        break
                    wake = float(wake_at)
                until = min(wake, state.duration, now + TICK_S * 1000.0)
                state.cond.wait(max(until - now, 0.0) / 1000.0)
                if on_tick is not None and time.monotonic() >= next_tick:
                    break  # report progress (outside the lock), then decide again
            if not chosen_rows:
                continue
            start = now
            inputs = [state.inputs.pop(row) for row in chosen_rows]
            for row in chosen_rows:
                run.batch[row] = batch
                run.batch_size[row] = len(chosen_rows)
                run.batch_start_ms[row] = start
        outputs = backend.run(inputs)
        with state.cond:
            end = _now(state)
            worst = 0.0
            for position, row in enumerate(chosen_rows):
                run.batch_end_ms[row] = end
                run.status[row] = DELIVERED
                worst = max(worst, end - float(run.ready_ms[row]))
                state.rows_in_batch[row] = position
            feedback = worst
            if post:
                state.outputs[batch] = outputs
                state.posts_left[batch] = len(chosen_rows)
                for row in sorted(chosen_rows, key=lambda r: int(run.session[r])):
                    key = (end, POST, int(run.session[row]), next(state.sequence))
                    heapq.heappush(state.queue, _Job(key, POST, int(run.session[row]), row))
            else:
                for row in chosen_rows:
                    run.post_end_ms[row] = end
            batch += 1
            state.changed = True  # a batch completion is a reason to decide
            state.cond.notify_all()
