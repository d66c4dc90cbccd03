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

A server is not trusted (``planner.validate.server.client``): every call has a time limit,
the whole test may have one (``ServerOptions.time_limit_s``), and a failure of the server
(``ServerFailed``) while measuring its curve ends the test with nothing to keep; during
the runs it ends the test with the runs finished before it, marked (``ServerLoadTest.
stopped``, ``interrupted``). A run whose statistics the server withholds or gives in a
form that cannot be true is kept without what needs them (the batch sizes run, the busy
time), said in its note and the test's warnings.

Nothing here prints or stores: ``planner loadtest --target`` does.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from planner.curves.curve import Curve
from planner.curves.fit import fit_curve
from planner.errors import BadInput
from planner.plan.request import Criteria, model_spread, model_table
from planner.sim.calibration import Calibration
from planner.sim.scenario import Scenario
from planner.sim.simulate import simulate
from planner.units import Milliseconds
from planner.validate.judge import prediction_request, search_cap
from planner.validate.measured_vs_predicted import Summary
from planner.validate.options import LoadTestOptions, default_batches
from planner.validate.runs import SERVER_SOURCE, Cap, LoadTest, Progress, ProgressFn, Run
from planner.validate.server.calibration import fit_server
from planner.validate.server.client import (
    CALL_TIMEOUT_S,
    Connection,
    Link,
    ServerFailed,
    ServerModel,
    open_model,
)
from planner.validate.server.curves import (
    CONCURRENT,
    SINGLE,
    Sweep,
    make_server_curve,
    per_request_ms,
    sweep,
)
from planner.validate.server.leaves_out import counts_text
from planner.validate.server.statistics import Statistics, read_statistics
from planner.validate.server.target import Target
from planner.validate.server.traffic import ANSWERED, ServerRun, drive

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
    server's address), how long one call may take, how long the whole test may take
    (None: no bound but the calls'), and the headers every call carries (an access
    token: never stored or shown)."""

    target: Target
    model: str
    input_shape: tuple[int, ...] | None = None
    batches: tuple[int, ...] | None = None
    warmup: int = 5
    repetitions: int = 30
    card: str | None = None
    call_timeout_s: float = CALL_TIMEOUT_S
    time_limit_s: float | None = None
    headers: tuple[tuple[str, str], ...] = field(default=(), repr=False)

    def __post_init__(self) -> None:
        problems = []
        if not self.model.strip():
            problems.append("give the model's name on the server (--model NAME)")
        if self.warmup < 0 or self.repetitions < 1:
            problems.append("the curve needs at least one timed call per batch size")
        if self.batches is not None and (not self.batches or any(b < 1 for b in self.batches)):
            problems.append("batch sizes to measure must be whole numbers from 1 up")
        if not (self.call_timeout_s > 0 and math.isfinite(self.call_timeout_s)):
            problems.append("a call's time limit must be above 0 s")
        limit = self.time_limit_s
        if limit is not None and not (limit > 0 and math.isfinite(limit)):
            problems.append("the load test's time limit must be above 0 s")
        if problems:
            raise BadInput(problems)


def server_options(options: LoadTestOptions, model: ServerModel) -> LoadTestOptions:
    """The load test's options with the server's batcher as the prediction's policy:
    ``triton`` with the model's ``max_batch_size`` and ``max_queue_delay_microseconds``.
    A model without a dynamic batcher runs each request on its own (B = 1, no wait)."""
    batcher = model.batcher
    return replace(
        options,
        policies=(POLICY,),
        max_batch=int(batcher["max_batch"]),
        max_queue_delay_us=batcher["max_queue_delay_us"],
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
    single-request curve), both measured curves (single, concurrent), the per-request
    cost between them (``planner.validate.server.curves.per_request_ms``), and what
    stopped the runs early (None: nothing, or Ctrl-C)."""

    test: LoadTest
    curves: tuple[Curve, Curve]
    per_request_ms: Milliseconds
    stopped: str | None = None


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
    during the connection or the curves it is raised (nothing to keep yet). A failure of
    the server during the runs ends it the same way, with ``stopped`` saying why.

    Raises BadInput: the server unreachable, the model unknown, not ready or described in
    a way that cannot be used; ServerFailed: the server failing, hanging or answering what
    cannot be true while its curve is measured, or failing before the first run finished.
    """
    report = progress or (lambda _p: None)
    units = options.runs + 2
    env: dict[str, Any] = _environment()
    limit = server.time_limit_s
    link = Link(
        server.call_timeout_s,
        None if limit is None else time.monotonic() + limit,
        dict(server.headers),
    )
    runs: list[Run] = []
    caps: list[Cap] = []
    interrupted = False
    stopped: str | None = None
    with asyncio.Runner() as runner:
        connection = runner.run(open_model(server.target, server.model, server.input_shape, link))
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
                    _time_for(link, scenario)
                    run, served, ran = runner.run(measure_server_run(connection, scenario, tick))
                    runs.append(run)
                    env["runs"].append(_run_note(scenario, served, ran))
                if find_cap_upto is not None:
                    caps.append(
                        find_server_cap(
                            runner, connection, options, curves[0], criteria or Criteria(),
                            find_cap_upto, report, runs,
                        )
                    )  # fmt: skip
            except KeyboardInterrupt:
                interrupted = True
            except ServerFailed as exc:
                if not runs:
                    raise
                interrupted, stopped = True, str(exc)
                env["stopped"] = stopped
        finally:
            with contextlib.suppress(Exception, KeyboardInterrupt):
                runner.run(connection.close())
    with contextlib.suppress(OSError):
        env["load_average_end"] = list(os.getloadavg())
    env["finished_at"] = _now().isoformat()
    env["sweeps"] = {s.way: {str(b): s.timings[b] for b in s.batches} for s in sweeps}
    report(Progress(0.99, "fitting a calibration of the curve to the runs"))
    calibration, why = fit_calibration(runs, curves[0])
    report(Progress(1.0, "done"))
    notes = [f"the curve: {n}" for s in sweeps for n in s.notes]
    test = LoadTest(
        calibration=calibration,
        curve=curves[0],
        options=options,
        runs=tuple(runs),
        environment=env,
        caps=tuple(caps),
        interrupted=interrupted,
        source=SERVER_SOURCE,
        description=f"{model.name} at {model.target.url}",
        warnings=tuple([*dict.fromkeys(notes), *_warnings(env["runs"])]
                       + ([f"no calibration stored: {why}"] if why else [])
                       + ([f"stopped early: {stopped}"] if stopped else [])),
    )  # fmt: skip
    return ServerLoadTest(test, curves, per_request, stopped)


def fit_calibration(runs: Sequence[Run], curve: Curve) -> tuple[Calibration | None, str]:
    """The calibration of ``curve`` (the single-request curve the runs were predicted on)
    fitted to every run (``planner.validate.server.calibration.fit_server``), as the
    reference worker's load test fits one to every run; and why there is none ("" when
    there is). Only the server's answers as the client saw them go in: a server that
    withholds its statistics is calibrated all the same."""
    if not runs:
        return None, "no run finished"
    try:
        found = fit_server(runs, curve.id, curve.per_request_ms)
    except BadInput as exc:
        return None, "; ".join(exc.problems)
    counts = sorted({r.sessions for r in runs})
    note = (
        "fitted to the p50, p99 and slowest-session frame rate of the runs at "
        f"{counts_text(counts)} session{'s' if counts != [1] else ''} (a server's records "
        "hold no batches)"
    )
    return replace(found, created_at=_now().replace(tzinfo=None), note=note), ""


def _time_for(link: Link, scenario: Scenario) -> None:
    """ServerFailed (stopped) when the load test's time limit ends before the run could."""
    if link.deadline is not None and link.deadline - time.monotonic() < scenario.duration_s:
        raise ServerFailed(
            f"the load test's time limit leaves too little for the run of "
            f"{scenario.sessions} sessions ({scenario.duration_s:g} s)",
            stopped=True,
        )


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


COUNT_LAG_S = (0.05, 0.2, 0.5)
"""How long to wait before reading a server's statistics again, each time its count of
frames falls short of the answers the client received (``measure_server_run``)."""


async def measure_server_run(
    connection: Connection,
    scenario: Scenario,
    tick: Callable[[float], None] | None = None,
) -> tuple[Run, ServerRun, Statistics | str]:
    """Send one scenario to the server and predict it: the pair as a ``Run``, the frames
    as sent, and what the server's statistics say it ran meanwhile (or why they cannot
    say: ``planner.validate.server.statistics.read_statistics``, ``Statistics.impossible``).
    The measured GPU busy fraction is the server's: the time its executions took over the
    run's duration (per model instance), at most all of it; None without statistics. The
    second reading follows the last answer, so the executions that drained a queue left
    at the end count too: they are judged possible against the time between the two
    readings, and a run that left a queue reads as busy throughout, as it was.
    ServerFailed when the server stopped answering during the run."""
    started = time.monotonic()
    before = await read_statistics(connection)
    served = await serve_run(connection, scenario, tick)
    after = await read_statistics(connection)
    for wait_s in COUNT_LAG_S:
        # A server counts a request after it has answered it: on a busy machine the last
        # answers can reach the client before the count does, so a count short of the
        # answers is read again before it is judged impossible.
        if not (isinstance(before, Statistics) and isinstance(after, Statistics)):
            break
        if after.since(before).frames >= served.count(ANSWERED):
            break
        await asyncio.sleep(wait_s)
        after = await read_statistics(connection)
    span_ms = max((time.monotonic() - started) * 1000.0, scenario.duration_ms)
    instances = connection.model.instances or 1
    ran: Statistics | str = after if isinstance(after, str) else before
    if isinstance(before, Statistics) and isinstance(after, Statistics):
        ran = after.since(before)
        problem = ran.impossible(served.count(ANSWERED), span_ms, instances)
        if problem is not None:
            ran = f"the server's statistics cannot be true ({problem})"
    worker = served.worker_run()
    measured = Summary.of(worker.results(), served.lateness_ms)
    busy = None
    if isinstance(ran, Statistics):
        busy = min(ran.busy_ms / scenario.duration_ms / instances, 1.0)
    measured = replace(measured, gpu_busy_fraction=busy)
    predicted = simulate(scenario)
    run = Run(
        scenario=scenario,
        measured=measured,
        predicted=Summary.of(predicted),
        records=worker,
        predicted_results=predicted,
    )
    return run, served, ran


async def serve_run(
    connection: Connection, scenario: Scenario, tick: Callable[[float], None] | None = None
) -> ServerRun:
    """One run's traffic (``drive``); ServerFailed when no frame was answered and the
    server no longer says it is live: it stopped answering during the run."""
    served = await drive(connection, scenario, on_tick=tick)
    if served.count(ANSWERED) == 0 and served.frames and not await connection.live():
        raise ServerFailed(
            f"the server at {connection.model.target.url} stopped answering during the run "
            f"of {scenario.sessions} session{'s' if scenario.sessions != 1 else ''}"
        )
    return served


def find_server_cap(
    runner: asyncio.Runner,
    connection: Connection,
    options: LoadTestOptions,
    curve: Curve,
    criteria: Criteria,
    upto: int,
    report: ProgressFn | None = None,
    done: Sequence[Run] = (),
) -> Cap:
    """The seat cap on the server beside the recommendation's for the same scenarios on
    the curve (``planner.validate.judge.search_cap``, as the reference worker's). A count
    whose every seed is among the runs ``done`` already is judged on their records: the
    same traffic (the same capture times) sent again would only take the time again."""
    table, spread = server_tables(curve, max(64, upto, options.max_batch or 1))
    kept: dict[tuple[int, int], Any] = {
        (r.sessions, r.scenario.seed): r.records for r in done if r.records is not None
    }

    def runs_at(n: int) -> list[Any]:
        seeds = [options.seed + k for k in range(options.seeds)]
        if all((n, seed) in kept for seed in seeds):
            return [kept[n, seed] for seed in seeds]
        return [
            runner.run(
                serve_run(connection, server_scenario(options, table, n, seed, spread))
            ).worker_run()
            for seed in seeds
        ]

    request = replace(
        prediction_request(options, fit_curve(curve.points), POLICY, criteria, upto, (0.0, 0.0)),
        queue=SERVER_QUEUE,
        per_request_ms=curve.per_request_ms,
    )
    return search_cap(POLICY, runs_at, criteria, upto, request, report)


def _run_note(scenario: Scenario, served: ServerRun, ran: Statistics | str) -> dict[str, Any]:
    """A run's frames as sent and the server's own count of them (None, with why, where
    there is none to use), for the environment."""
    known = isinstance(ran, Statistics)
    return {
        "sessions": scenario.sessions,
        "seed": scenario.seed,
        "frames": served.counts(),
        "errors": list(served.errors),
        "server": ran.as_dict() if isinstance(ran, Statistics) else None,
        **({} if known else {"statistics": ran}),
    }


def _warnings(notes: Sequence[dict[str, Any]]) -> list[str]:
    out = []
    for note in notes:
        count = note["sessions"]
        run = f"{count} session{'s' if count != 1 else ''}, seed {note['seed']}"
        frames = note["frames"]
        lost = frames["failed"] + frames["timed out"]
        if lost:
            first = f": {note['errors'][0]}" if note["errors"] else ""
            out.append(
                f"{run}: {frames['failed']} requests failed and {frames['timed out']} timed "
                f"out{first}"
            )
        if note.get("statistics"):
            out.append(
                f"{run}: {note['statistics']}; the batch sizes run and the busy time are "
                "unavailable"
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
