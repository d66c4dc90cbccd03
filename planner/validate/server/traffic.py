"""One run of session traffic against the server: every frame of the scenario one request
of batch 1, sent at its capture time (plus the network delay, the time it would reach the
server) on an asyncio loop, the way cameras would send them.

The capture times are the simulator's own (``planner.validate.worker.schedule``, which is
``planner.sim.arrivals.arrivals``), bit for bit. A frame whose send time falls at or after
the end of the run is never sent (pending, as the reference worker leaves it). A request
sent before the end is waited for, up to the connection's time limit per call: it ends
delivered, failed (the server or the transport answered with an error, or an answer that
does not fit what was sent) or timed out. A run during which the whole load test's time
limit ran out is no run: ``drive`` raises ``ServerFailed`` (stopped).

``ServerRun`` keeps, per frame: session, index, capture time, the scheduled and the
actual send time, when the answer came, and the status. ``worker_run`` gives the same run
as the reference worker's records (``planner.validate.worker.frames.WorkerRun``), so it is
summarised, stored and written out by the code that handles the worker's runs: the send
is the frame's arrival (its lateness is the actual send less the scheduled one) and the
request is its batch, from send to answer; failed and timed-out frames count as expired
(dropped). An answer that comes after the end of the run is a frame the server still held
when the run ended, as the simulator counts it (pending: a server that queues every frame
leaves its queue at the end, ``planner.sim.queue_all``), so measured and predicted figures
are over the same window; ``ServerRun`` keeps every answer, for the server's own counts.
The server does not say which request ran in which batch: its statistics do
(``planner.validate.server.statistics``), per run rather than per frame.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from planner.sim.scenario import Scenario
from planner.validate.server.client import Connection, ServerFailed
from planner.validate.worker.frames import DELIVERED, EXPIRED, PENDING, WorkerRun, empty_run
from planner.validate.worker.schedule import schedule

NOT_SENT, ANSWERED, FAILED, TIMED_OUT = 0, 1, 2, 3
STATUSES: tuple[str, ...] = ("pending", "delivered", "failed", "timed out")
"""What became of a frame, by code."""
LEAD_MS = 50.0
"""The run starts this long after it is called, so the loop is idle when the first frame
is due."""
TICK_S = 0.25
"""How often a run reports how far it is."""
Tick = Callable[[float], None]


@dataclass(frozen=True)
class ServerRun:
    """Every frame of one run against the server (see the module docstring); times in ms
    from the start of the run, NaN where a frame never got there."""

    scenario: Scenario
    session: np.ndarray
    frame: np.ndarray
    capture_ms: np.ndarray
    send_ms: np.ndarray
    sent_ms: np.ndarray
    done_ms: np.ndarray
    status: np.ndarray
    errors: tuple[str, ...] = ()

    @property
    def frames(self) -> int:
        return int(self.session.size)

    def count(self, status: int) -> int:
        return int(np.count_nonzero(self.status == status))

    @property
    def lateness_ms(self) -> np.ndarray:
        """How late each sent frame went out (ms): the client could not keep up."""
        sent = ~np.isnan(self.sent_ms)
        return self.sent_ms[sent] - self.send_ms[sent]

    def counts(self) -> dict[str, int]:
        """Frames by what became of them (``STATUSES``), and ``after the end``: those
        answered after the end of the run (delivered here, still queued in the records)."""
        late = int(np.sum((self.status == ANSWERED) & (self.done_ms > self.scenario.duration_ms)))
        return {name: self.count(code) for code, name in enumerate(STATUSES)} | {
            "after the end": late
        }

    def worker_run(self) -> WorkerRun:
        """The run as the reference worker's records (see the module docstring)."""
        run = empty_run(self.scenario, self.session, self.frame)
        np.copyto(run.capture_ms, self.capture_ms)
        np.copyto(run.arrival_ms, self.send_ms)
        np.copyto(run.arrived_ms, self.sent_ms)
        np.copyto(run.ready_ms, self.sent_ms)
        in_run = self.done_ms <= self.scenario.duration_ms
        answered = np.flatnonzero((self.status == ANSWERED) & in_run)
        order = answered[np.argsort(self.done_ms[answered], kind="stable")]
        run.batch[order] = np.arange(order.size)
        run.batch_size[order] = 1
        run.batch_start_ms[order] = self.sent_ms[order]
        run.batch_end_ms[order] = self.done_ms[order]
        run.post_end_ms[order] = self.done_ms[order]
        run.status[order] = DELIVERED
        run.status[(self.status == FAILED) | (self.status == TIMED_OUT)] = EXPIRED
        run.status[(self.status == NOT_SENT) | ((self.status == ANSWERED) & ~in_run)] = PENDING
        return run


async def drive(
    connection: Connection,
    scenario: Scenario,
    *,
    on_tick: Tick | None = None,
) -> ServerRun:
    """Send ``scenario``'s frames to the server at their times and wait for every answer
    (see the module docstring); ServerFailed (stopped) when the load test's time limit
    ends the run."""
    plan = schedule(scenario)
    n = plan.frames
    sent = np.full(n, np.nan)
    done = np.full(n, np.nan)
    status = np.full(n, NOT_SENT, np.int8)
    errors: list[str] = []
    stopped: list[ServerFailed] = []
    duration = scenario.duration_ms
    connection.prepare([1])
    t0 = time.perf_counter_ns() + int(LEAD_MS * 1e6)

    def now() -> float:
        return (time.perf_counter_ns() - t0) / 1e6

    async def one(row: int) -> None:
        sent[row] = now()
        try:
            await connection.infer(1)
        except ServerFailed as exc:
            status[row] = TIMED_OUT if exc.timed_out else FAILED
            if exc.stopped:
                stopped.append(exc)
            elif not exc.timed_out and len(errors) < 5:
                errors.append(exc.detail[:200])
        else:
            status[row] = ANSWERED
        done[row] = now()

    async def ticks() -> None:
        assert on_tick is not None
        while True:
            await asyncio.sleep(TICK_S)
            on_tick(min(max(now() / duration, 0.0), 1.0))

    ticker = asyncio.create_task(ticks()) if on_tick is not None else None
    requests = []
    try:
        for row in plan.order.tolist():
            due = float(plan.arrival_ms[row])
            if due >= duration:
                break  # would reach the server after the run: never sent
            wait = due - now()
            if wait > 0:
                await asyncio.sleep(wait / 1000.0)
            requests.append(asyncio.create_task(one(row)))
        await asyncio.gather(*requests)
    finally:
        for task in requests:
            task.cancel()
        if ticker is not None:
            ticker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await ticker
    if stopped:
        raise stopped[0]
    return ServerRun(
        scenario=scenario,
        session=plan.session,
        frame=plan.frame,
        capture_ms=plan.capture_ms,
        send_ms=plan.arrival_ms,
        sent_ms=sent,
        done_ms=done,
        status=status,
        errors=tuple(errors),
    )
