"""Judging a real worker's runs the way the recommendation judges simulated ones: a
measured run as a simulated outcome, seeds pooled, the cap under the same criteria and
stopping rule (SPEC §5.2 "Measured seat cap"), and the request that predicts the same
scenarios. Pure: nothing here runs a device."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from planner.curves.fit import FittedCurve
from planner.errors import BadInput
from planner.plan.outcomes import failures
from planner.plan.recommend import recommend
from planner.plan.request import Criteria, Request, model_spread
from planner.sim.calibration import Calibration
from planner.sim.sweep import Pooled, pool
from planner.units import Milliseconds
from planner.validate.options import LoadTestOptions
from planner.validate.runs import Cap, Progress, ProgressFn
from planner.validate.worker.backends import Backend
from planner.validate.worker.frames import WorkerRun
from planner.validate.worker.serve import serve


def outcome(run: WorkerRun) -> Any:
    """A measured run as the simulator's per-run outcome (``planner.sim.ensemble.Outcome``),
    so that seeds are pooled exactly as the recommendation pools simulated ones."""
    from planner.sim.arrivals import arrivals
    from planner.sim.delivered import delivered_fps
    from planner.sim.ensemble import Outcome
    from planner.sim.pipeline import job_sums

    s = run.scenario
    r = run.records()
    sizes = np.bincount(r.batch_size, minlength=1) if r.batch_size.size else np.zeros(1, np.int64)
    busy = float(np.sum(np.minimum(r.batch_end, s.duration_ms) - r.batch_start))
    cpu_sums = None
    if s.cpu_pool:
        cpu_sums = job_sums(
            r.job_kind,
            r.job_ready,
            r.job_start,
            s.stages.pre_ms,
            s.stages.post_ms,
            s.duration_ms,
        )
    latency, worker = r.frame_latency, r.frame_done - r.frame_arrival
    thirds = None
    if s.queue == "all":
        # Whether the queue grew through the run, as for a simulated one: the frames in the
        # order their batches started, then where the second and the last third begin.
        started = r.batch_start[r.frame_batch]
        order = np.argsort(started, kind="stable")
        latency, worker, started = latency[order], worker[order], started[order]
        first, last = np.searchsorted(started, (s.duration_ms / 3.0, 2.0 * s.duration_ms / 3.0))
        thirds = (int(first), int(last))
    return Outcome(
        scenario=s,
        fps=delivered_fps(s, arrivals(s), r.delivered, r.pending),
        arrived=int(r.arrived.sum()),
        delivered=int(r.delivered.sum()),
        overwritten=int(r.overwritten.sum()),
        expired=int(r.expired.sum()),
        busy_ms=busy,
        latency_ms=latency,
        batch_sizes=sizes.astype(np.int64),
        worker_ms=worker,
        cpu_sums=cpu_sums,
        job_waits=(r.job_kind, r.job_start - r.job_ready) if s.cpu_pool else None,
        thirds=thirds,
    )


def pooled(runs: Sequence[WorkerRun], percentile: float) -> Pooled:
    """The measured runs of one option at one session count (one per seed), pooled as
    the recommendation pools simulations (``planner.sim.sweep.pool``)."""
    return pool([outcome(r) for r in runs], percentile)


def cap_of(rows: Sequence[Pooled], criteria: Criteria) -> tuple[int, str]:
    """The seat cap over rows for n = 1, 2, …: the largest n such that every count up to
    it meets the criteria (stop at the first failure), and why the next one fails."""
    for index, row in enumerate(rows):
        failed = failures(row, criteria)
        if failed:
            return index, "; ".join(f.sentence for f in failed)
    return len(rows), f"meets every criterion up to {len(rows)} sessions, the largest tried"


def find_cap(
    options: LoadTestOptions,
    policy: str,
    backend: Backend,
    fitted: FittedCurve,
    criteria: Criteria,
    upto: int,
    stage_ms: tuple[Milliseconds, Milliseconds],
    calibration: Calibration | None = None,
    report: ProgressFn | None = None,
) -> Cap:
    """Search ``policy``'s seat cap on the real worker (``search_cap``), beside the
    recommendation's cap for the same scenarios on the curve (with ``calibration`` where
    given)."""
    table = tuple(float(v) for v in fitted.table(max(64, upto)))
    spread = model_spread(fitted, max(64, upto), None, True)
    pre, post = stage_ms

    def runs_at(n: int) -> list[WorkerRun]:
        return [
            serve(options.scenario(table, n, policy, options.seed + k, pre, post, spread), backend)
            for k in range(options.seeds)
        ]

    request = prediction_request(options, fitted, policy, criteria, upto, stage_ms, calibration)
    return search_cap(policy, runs_at, criteria, upto, request, report)


def search_cap(
    policy: str,
    runs_at: Callable[[int], Sequence[WorkerRun]],
    criteria: Criteria,
    upto: int,
    request: Request,
    report: ProgressFn | None = None,
) -> Cap:
    """The seat cap measured and predicted, the one place a ``Cap`` is made: n = 1, 2, …
    sessions, the runs ``runs_at(n)`` serves (one per seed) pooled and judged by
    ``criteria``, stopping at the first failure (at most ``upto``); and the
    recommendation's cap for ``request``, the same scenarios simulated."""
    measured = upto
    reason = f"meets every criterion up to {upto} sessions, the largest tried"
    for n in range(1, upto + 1):
        if report is not None:
            what = f"{n} session{'s' if n != 1 else ''}"
            report(Progress(0.99, f"finding the cap of {policy}: {what}"))
        failed = failures(pooled(runs_at(n), criteria.percentile), criteria)
        if failed:
            measured = n - 1
            reason = "; ".join(f.sentence for f in failed)
            break
    option = recommend(request).options[0]
    return Cap(
        policy=policy,
        measured=measured,
        predicted=option.cap,
        predicted_low=option.cap_low,
        predicted_high=option.cap_high,
        largest=upto,
        measured_reason=reason,
        predicted_reason=option.binding_constraint,
    )


def prediction_request(
    options: LoadTestOptions,
    fitted: FittedCurve,
    policy: str,
    criteria: Criteria,
    upto: int,
    stage_ms: tuple[Milliseconds, Milliseconds],
    calibration: Calibration | None = None,
) -> Request:
    """The recommendation request that predicts the cap of ``policy`` for the scenarios
    the load test serves (same seeds, duration, stages and criteria)."""
    pre, post = stage_ms
    if options.seed != 0:
        raise BadInput("a predicted cap draws seeds from 0, as the recommendation does; use seed 0")
    return Request(
        curve=fitted,
        criteria=replace(criteria, overhead_ms=options.overhead_ms),
        policies=(policy,),
        seeds=options.seeds,
        duration_s=options.duration_s,
        max_sessions=upto,
        fps=options.fps,
        phases=options.phases,  # type: ignore[arg-type]
        jitter_ms=options.jitter_ms,
        max_batch=options.max_batch,
        max_queue_delay_us=options.max_queue_delay_us,
        slo_ms=options.slo_ms,
        stages=options.stages_for(pre, post),
        calibration=calibration,
    )
