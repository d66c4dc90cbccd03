"""A load test against a KServe v2 server: the server's batch curve, session traffic, and
the simulator's prediction of the same scenarios, as the same ``LoadTest`` the reference
worker's load test makes (``planner.validate.loadtest``), stored and reported the same way.

``run_server_loadtest`` connects to the model (``planner.validate.server.client``),
measures its batch curve two ways (``planner.validate.server.curves``), then runs each
session count: the scenario's frames sent at their capture times, one request each
(``planner.validate.server.traffic``), with the server's statistics read before and after
(``planner.validate.server.statistics``). Each run is predicted by the simulator on the
single-request curve under the ``triton`` policy with the server's own batcher settings
(``server_scenario``). With ``find_cap_upto`` it also searches the seat cap on the server,
as ``planner.validate.judge.find_cap`` does on the reference worker.

Nothing here prints or stores: ``planner loadtest --target`` does.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from planner.curves.curve import Curve
from planner.curves.fit import fit_curve
from planner.errors import BadInput
from planner.plan.options import failures
from planner.plan.recommend import recommend
from planner.plan.request import Criteria, model_spread, model_table
from planner.sim.scenario import Scenario
from planner.sim.simulate import simulate
from planner.units import Milliseconds
from planner.validate.judge import pooled, prediction_request
from planner.validate.measured_vs_predicted import Summary
from planner.validate.options import LoadTestOptions, default_batches
from planner.validate.runs import SERVER_SOURCE, Cap, LoadTest, Progress, ProgressFn, Run
from planner.validate.server.client import Connection, ServerModel, open_model
from planner.validate.server.curves import (
    CONCURRENT,
    SINGLE,
    Sweep,
    make_server_curve,
    per_request_ms,
    sweep,
)
from planner.validate.server.statistics import Statistics, parse_statistics
from planner.validate.server.target import Target
from planner.validate.server.traffic import TIMEOUT_S, ServerRun, drive

SERVER_QUEUE = "all"
"""What a Triton-like server does with a request it cannot run at once: it queues it,
every one of them (no newer frame of a session replaces an older one in its queue)."""
POLICY = "triton"


@dataclass(frozen=True)
class ServerOptions:
    """Where the load test sends its traffic and how it measures the server's curve:
    the target and model, one frame's input shape where the model leaves it open, the
    batch sizes to measure (None: those the runs can form, up to the model's limit),
    warm-up and timed calls per batch size, the card name for the curves (None: the
    server's address), and how long a request may take."""

    target: Target
    model: str
    input_shape: tuple[int, ...] | None = None
    batches: tuple[int, ...] | None = None
    warmup: int = 5
    repetitions: int = 30
    card: str | None = None
    timeout_s: float = TIMEOUT_S

    def __post_init__(self) -> None:
        problems = []
        if not self.model.strip():
            problems.append("give the model's name on the server (--model NAME)")
        if self.warmup < 0 or self.repetitions < 1:
            problems.append("the curve needs at least one timed call per batch size")
        if self.batches is not None and (not self.batches or any(b < 1 for b in self.batches)):
            problems.append("batch sizes to measure must be whole numbers from 1 up")
        if not (self.timeout_s > 0 and math.isfinite(self.timeout_s)):
            problems.append("the request timeout must be above 0 s")
        if problems:
            raise BadInput(problems)


def server_options(options: LoadTestOptions, model: ServerModel) -> LoadTestOptions:
    """The load test's options with the server's batcher as the prediction's policy:
    ``triton`` with the model's ``max_batch_size`` and ``max_queue_delay_microseconds``.
    A model without a dynamic batcher runs each request on its own (B = 1, no wait)."""
    batching = model.max_queue_delay_us is not None and model.max_batch_size > 0
    return replace(
        options,
        policies=(POLICY,),
        max_batch=model.largest_batch if batching else 1,
        max_queue_delay_us=model.max_queue_delay_us if batching else 0.0,
    )


def server_scenario(
    options: LoadTestOptions,
    table: Sequence[float],
    sessions: int,
    seed: int,
    spread: Sequence[float] = (),
) -> Scenario:
    """The scenario a run sends to the server and the simulator predicts: the options'
    sessions, frame rate, phases and seed (so the same capture times) under ``triton``
    with the server's batcher settings (``server_options``), on a server that queues
    every request (``SERVER_QUEUE``), with the batch-time spread the curve measured."""
    scenario = options.scenario(table, sessions, POLICY, seed)
    upto = len(scenario.latency_ms)
    return scenario.with_(queue=SERVER_QUEUE, spread=tuple(spread[:upto]))


def server_tables(curve: Curve, upto: int) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """The latency table and batch-time spread a server's runs are predicted on: the
    single-request curve with its per-request cost, ``L(b) + b * per_request`` (what b
    single-frame requests cost the server: ``planner.validate.server.curves``), and the
    spread its points' p10/p90 say (``planner.plan.request.model_table``, ``model_spread``)."""
    fitted = fit_curve(curve.points)
    table = model_table(fitted, upto, "central", curve.per_request_ms, None)
    return table, model_spread(fitted, upto, None, True)


def measurement_batches(
    options: LoadTestOptions, server: ServerOptions, model: ServerModel
) -> tuple[int, ...]:
    """The batch sizes the curves are measured at: those asked for, or every size the
    runs can form (``default_batches``), none above the model's largest batch."""
    wanted = server.batches or default_batches(options.sessions)
    kept = tuple(sorted({b for b in wanted if b <= model.largest_batch}))
    return kept or (1,)


@dataclass(frozen=True)
class ServerLoadTest:
    """A finished (or interrupted) server load test: the ``LoadTest`` (predicted on the
    single-request curve), both measured curves (single, concurrent) and the per-request
    cost between them (``planner.validate.server.curves.per_request_ms``)."""

    test: LoadTest
    curves: tuple[Curve, Curve]
    per_request_ms: Milliseconds


def run_server_loadtest(
    options: LoadTestOptions,
    server: ServerOptions,
    *,
    progress: ProgressFn | None = None,
    criteria: Criteria | None = None,
    find_cap_upto: int | None = None,
) -> ServerLoadTest:
    """Measure the server's curves, run every (sessions, seed) against it, predict each
    with the simulator (see the module docstring). Ctrl-C (KeyboardInterrupt) during the
    runs ends the test early with the runs finished before it and ``interrupted`` set;
    during the connection or the curves it is raised (nothing to keep yet).

    Raises BadInput: the server unreachable, the model unknown or not ready, an input
    that cannot be sent, statistics the server withholds.
    """
    report = progress or (lambda _p: None)
    units = options.runs + 2
    env: dict[str, Any] = _environment()
    runs: list[Run] = []
    caps: list[Cap] = []
    interrupted = False
    with asyncio.Runner() as runner:
        connection = runner.run(open_model(server.target, server.model, server.input_shape))
        try:
            model = connection.model
            options = server_options(options, model)
            env.update(model.describe())
            curves, per_request, sweeps = _curves(runner, connection, options, server, report)
            env["per_request_ms"] = per_request
            env["curves"] = {SINGLE: curves[0].id, CONCURRENT: curves[1].id}
            largest = max(max(options.sessions), find_cap_upto or 0, options.max_batch or 1)
            table, spread = server_tables(curves[0], max(64, largest))
            planned = [
                server_scenario(options, table, n, options.seed + k, spread)
                for n in options.sessions
                for k in range(options.seeds)
            ]
            env["runs"] = []
            try:
                for done, scenario in enumerate(planned, start=2):
                    label = (
                        f"{scenario.sessions} session{'s' if scenario.sessions != 1 else ''}, "
                        f"{scenario.policy}, seed {scenario.seed}"
                    )

                    def tick(fraction: float, done: int = done, label: str = label) -> None:
                        report(Progress((done + fraction) / units, label))

                    report(Progress(done / units, label))
                    run, served, ran = runner.run(
                        measure_server_run(connection, scenario, server.timeout_s, tick)
                    )
                    runs.append(run)
                    env["runs"].append(_run_note(scenario, served, ran))
                if find_cap_upto is not None:
                    caps.append(
                        find_server_cap(
                            runner, connection, options, curves[0], criteria or Criteria(),
                            find_cap_upto, server.timeout_s, report,
                        )
                    )  # fmt: skip
            except KeyboardInterrupt:
                interrupted = True
        finally:
            with contextlib.suppress(Exception, KeyboardInterrupt):
                runner.run(connection.close())
    with contextlib.suppress(OSError):
        env["load_average_end"] = list(os.getloadavg())
    env["finished_at"] = _now().isoformat()
    env["sweeps"] = {s.way: {str(b): s.timings[b] for b in s.batches} for s in sweeps}
    report(Progress(1.0, "done"))
    test = LoadTest(
        curve=curves[0],
        options=options,
        runs=tuple(runs),
        environment=env,
        caps=tuple(caps),
        interrupted=interrupted,
        source=SERVER_SOURCE,
        description=f"{model.name} at {model.target.url}",
        warnings=tuple(_warnings(env["runs"])),
    )
    return ServerLoadTest(test, curves, per_request)


def _curves(
    runner: asyncio.Runner,
    connection: Connection,
    options: LoadTestOptions,
    server: ServerOptions,
    report: ProgressFn,
) -> tuple[tuple[Curve, Curve], Milliseconds, tuple[Sweep, Sweep]]:
    """Both sweeps, the per-request cost between them, and the two curves."""
    model = connection.model
    batches = measurement_batches(options, server, model)
    connection.prepare(batches)
    found = []
    for position, way in enumerate((SINGLE, CONCURRENT)):

        def step(message: str, position: int = position) -> None:
            report(Progress(position / (options.runs + 2), f"measuring the server: {message}"))

        found.append(
            runner.run(sweep(connection, way, batches, server.warmup, server.repetitions, step))
        )
    single, concurrent = found
    per_request = per_request_ms(single, concurrent)
    card = server.card or f"server at {model.target.address}"
    curves = (
        make_server_curve(single, connection, card, per_request),
        make_server_curve(concurrent, connection, card),
    )
    return curves, per_request, (single, concurrent)


async def measure_server_run(
    connection: Connection,
    scenario: Scenario,
    timeout_s: float = TIMEOUT_S,
    tick: Callable[[float], None] | None = None,
) -> tuple[Run, ServerRun, Statistics]:
    """Send one scenario to the server and predict it: the pair as a ``Run``, the frames
    as sent, and what the server's statistics say it ran meanwhile. The measured GPU busy
    fraction is the server's: the time its executions took over the run's duration (per
    model instance)."""
    name = connection.model.name
    before = parse_statistics(await connection.statistics(), name)
    served = await drive(connection, scenario, timeout_s=timeout_s, on_tick=tick)
    ran = parse_statistics(await connection.statistics(), name).since(before)
    worker = served.worker_run()
    measured = Summary.of(worker.results(), served.lateness_ms)
    instances = connection.model.instances or 1
    measured = replace(measured, gpu_busy_fraction=ran.busy_ms / scenario.duration_ms / instances)
    predicted = simulate(scenario)
    run = Run(
        scenario=scenario,
        measured=measured,
        predicted=Summary.of(predicted),
        records=worker,
        predicted_results=predicted,
    )
    return run, served, ran


def find_server_cap(
    runner: asyncio.Runner,
    connection: Connection,
    options: LoadTestOptions,
    curve: Curve,
    criteria: Criteria,
    upto: int,
    timeout_s: float = TIMEOUT_S,
    report: ProgressFn | None = None,
) -> Cap:
    """The seat cap on the server: n = 1, 2, … sessions, each on ``options.seeds`` seeds
    pooled and judged by the recommendation's criteria, stopping at the first failure (at
    most ``upto``), beside the recommendation's cap for the same scenarios on the curve;
    as ``planner.validate.judge.find_cap`` searches the reference worker's."""
    table, spread = server_tables(curve, max(64, upto, options.max_batch or 1))
    measured = upto
    reason = f"meets every criterion up to {upto} sessions, the largest tried"
    for n in range(1, upto + 1):
        if report is not None:
            what = f"{n} session{'s' if n != 1 else ''}"
            report(Progress(0.99, f"finding the cap of {POLICY}: {what}"))
        served = []
        for k in range(options.seeds):
            scenario = server_scenario(options, table, n, options.seed + k, spread)
            served.append(runner.run(drive(connection, scenario, timeout_s=timeout_s)))
        row = pooled([s.worker_run() for s in served], criteria.percentile)
        failed = failures(row, criteria)
        if failed:
            measured = n - 1
            reason = "; ".join(f.sentence for f in failed)
            break
    request = replace(
        prediction_request(options, fit_curve(curve.points), POLICY, criteria, upto, (0.0, 0.0)),
        queue=SERVER_QUEUE,
        per_request_ms=curve.per_request_ms,
    )
    option = recommend(request).options[0]
    return Cap(
        policy=POLICY,
        measured=measured,
        predicted=option.cap,
        predicted_low=option.cap_low,
        predicted_high=option.cap_high,
        largest=upto,
        measured_reason=reason,
        predicted_reason=option.binding_constraint,
    )


def _run_note(scenario: Scenario, served: ServerRun, ran: Statistics) -> dict[str, Any]:
    """A run's frames as sent and the server's own count of them, for the environment."""
    return {
        "sessions": scenario.sessions,
        "seed": scenario.seed,
        "frames": served.counts(),
        "errors": list(served.errors),
        "server": ran.as_dict(),
    }


def _warnings(notes: Sequence[dict[str, Any]]) -> list[str]:
    out = []
    for note in notes:
        frames = note["frames"]
        lost = frames["failed"] + frames["timed out"]
        if lost:
            first = f": {note['errors'][0]}" if note["errors"] else ""
            out.append(
                f"{note['sessions']} sessions, seed {note['seed']}: {frames['failed']} "
                f"requests failed and {frames['timed out']} timed out{first}"
            )
    return out


def _environment() -> dict[str, Any]:
    """What the client runs on: the machine and its load average at the start."""
    from planner.measure.devices import host

    env: dict[str, Any] = {"machine": host(), "started_at": _now().isoformat()}
    with contextlib.suppress(OSError):
        env["load_average_start"] = list(os.getloadavg())
    return env


def _now() -> datetime:
    return datetime.now(UTC).replace(microsecond=0)
