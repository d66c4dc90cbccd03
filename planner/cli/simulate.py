"""``planner simulate``: one scenario in detail, under any policy and sharing mode."""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path
from typing import Any

from planner import display, limits
from planner.cli.output import (
    add_curve_source,
    csv_list,
    link_values,
    note,
    number,
    open_store,
    option,
    print_json,
    read_curve_source,
)
from planner.cli.planning import add_worker_options, flag_spelling, spread_on
from planner.curves.fit import EDGES, fit_curve
from planner.errors import BadInput, NotFound
from planner.plan.overload import overload_notes
from planner.plan.params import queue_conflicts
from planner.plan.request import model_spread, model_table
from planner.sim.memory import MemoryLimit, available, memory_limit, memory_model
from planner.sim.pipeline import PART_LABELS, PARTS
from planner.sim.policies import POLICIES
from planner.sim.scenario import MODES, PHASES, Scenario
from planner.sim.sharing import owner_of, sharing_mode
from planner.sim.sharing.choice import parse_duties, parse_memory, sharing_for
from planner.sim.sharing.mps import peak_range
from planner.sim.simulate import simulate
from planner.sim.stages import WorkerStages


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "simulate",
        help="simulate N sessions on one GPU under a policy and sharing mode",
        description=(
            "Simulate N camera sessions sharing one GPU: each sends frames at its frame rate, "
            "the worker keeps only the newest frame per session, and the policy decides which "
            "waiting frames run as the next batch. The batch curve is fitted to the points "
            "(or the stored curve) for every batch size."
        ),
    )
    add_curve_source(parser)
    add_scenario_options(parser)
    parser.add_argument(
        "--edge",
        choices=EDGES,
        default="central",
        help="simulate on the fitted curve (central, default) or an edge of its band",
    )
    parser.add_argument(
        "--frames", type=Path, metavar="FILE", help="also write every delivered frame as CSV"
    )
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.set_defaults(handler=run)


def add_scenario_options(parser: argparse.ArgumentParser) -> None:
    """The options that describe one scenario (shared with ``planner link``)."""
    parser.add_argument(
        "--sessions", required=True, help=f"number of sessions ({limits.SESSIONS.words()})"
    )
    parser.add_argument(
        "--policy", default="oldest-first", choices=list(POLICIES), help="scheduling policy"
    )
    parser.add_argument("--max-batch", help="max-batch and triton: largest batch B")
    parser.add_argument(
        "--max-queue-delay-us", help="triton: longest wait for a fuller batch, µs (default 2000)"
    )
    parser.add_argument("--slo-ms", help="aimd and deadline: GPU-side latency objective, ms")
    option(parser, "fps", "frames per second: one value, or one per session (30,30,15)")
    option(parser, "duration_s", "simulated seconds")
    option(parser, "phases", "session phases", choices=PHASES)
    option(parser, "seed", "random seed")
    option(parser, "jitter_ms", "std of arrival jitter, ms")
    option(parser, "overhead_ms", "per-frame time outside the GPU, ms")
    option(parser, "mode", "GPU sharing mode", choices=MODES)
    parser.add_argument("--cotenants", help="time-slicing: co-tenant duty cycles, e.g. 0.9,0.9")
    option(parser, "busy_period_ms", "time-slicing: co-tenants' mean busy period, ms")
    parser.add_argument("--mps-share", help="mps: our compute share, percent (default 50)")
    parser.add_argument("--mig-profile", help="mig: the card's MIG profile, e.g. 3g.40gb")
    parser.add_argument(
        "--card", help="the card (for MIG and memory; default: the stored curve's card)"
    )
    add_worker_options(parser)


def scenario_from(
    args: argparse.Namespace, table: tuple[float, ...], curve: Any = None
) -> Scenario:
    """A validated scenario from parsed options (every problem reported at once)."""
    problems: list[str] = []

    def get(fn: Any, *a: Any, **k: Any) -> Any:
        try:
            return fn(*a, **k)
        except BadInput as exc:
            problems.extend(exc.problems)
            return None

    sessions = get(number, args.sessions, "--sessions", limits.SESSIONS)
    fps = tuple(get(number, f, "--fps", limits.FPS) for f in (csv_list(args.fps) or ["?"]))
    options = {
        "max_batch": (args.max_batch, "--max-batch", limits.MAX_BATCH),
        "max_queue_delay_us": (
            args.max_queue_delay_us, "--max-queue-delay-us", limits.MAX_QUEUE_DELAY_US,
        ),
        "slo_ms": (args.slo_ms, "--slo-ms", limits.SLO_MS),
    }  # fmt: skip
    params: dict[str, Any] = {}
    for name, (text, flag, bound) in options.items():
        if text is None:
            continue
        if name not in POLICIES[args.policy].params:
            problems.append(f"{flag} does not apply to the {args.policy} policy")
            continue
        value = get(number, text, flag, bound)
        params[name] = int(value) if bound.whole and value is not None else value
    sharing = get(sharing_from, args, curve)
    duration = get(number, args.duration_s, "--duration-s", limits.DURATION_S)
    seed = get(number, args.seed, "--seed", limits.SEED)
    jitter = get(number, args.jitter_ms, "--jitter-ms", limits.JITTER_MS)
    overhead = get(number, args.overhead_ms, "--overhead-ms", limits.OVERHEAD_MS)
    stage_values = {
        name: get(number, getattr(args, name), f"--{name.replace('_', '-')}", limits.STAGE_MS)
        for name in ("network_ms", "pre_ms", "post_ms")
    }
    workers = get(number, args.cpu_workers, "--cpu-workers", limits.CPU_WORKERS)
    # Each option on its own: one that does not read must not hide what the others say.
    queue: dict[str, Any] = {}
    for name in QUEUE_OPTIONS:
        queue.update(get(link_values, args, (name,)) or {})
    given = {n: v for n, v in queue.items() if getattr(args, n, None) is not None}
    problems += [message for _, message in queue_conflicts(given, flag_spelling)]
    if problems:
        raise BadInput(problems)
    if len(fps) not in (1, int(sessions)):
        raise BadInput(
            f"--fps gives {len(fps)} frame rates for {int(sessions)} sessions; give one for "
            "all or one per session"
        )
    upto = max(64, int(sessions), int(params.get("max_batch") or 0))
    return Scenario(
        latency_ms=table[:upto],
        sessions=int(sessions),
        policy=args.policy,
        fps=fps,
        duration_s=duration,
        phases=args.phases,
        seed=int(seed),
        jitter_ms=jitter,
        overhead_ms=overhead,
        sharing=sharing,
        stages=WorkerStages(**stage_values, cpu_workers=int(workers)),
        **params,
        **(queue or {}),
    )


QUEUE_OPTIONS = ("queue", "max_queue_size", "queue_timeout_us", "timeout_action")
"""The server's queue (``Scenario.queue``) and, under ``all``, its policy's settings."""


MODE_FLAGS = ("mig_profile", "cotenants", "mps_share", "cotenant_memory_mb", "mps_memory_mb")
"""The options that belong to one sharing mode (``SharingMode.parameters``) and have no
default, so giving one under another mode is a mistake."""


def sharing_from(args: argparse.Namespace, curve: Any = None) -> Any:
    """The sharing mode from ``--mode`` and its parameters."""
    kind = sharing_mode(args.mode)
    for given in MODE_FLAGS:
        if getattr(args, given) and given not in kind.parameters:
            flag = f"--{given.replace('_', '-')}"
            raise BadInput(f"{flag} needs --mode {owner_of(given).name}")
    card = None
    if kind.needs_card:
        name = args.card or (curve.card if curve is not None else None)
        if name:
            with open_store(args) as store:
                card = store.card(name)
    measured = bool(
        curve is not None and args.mig_profile and curve.mig_profile == args.mig_profile.strip()
    )
    return sharing_for(
        args.mode,
        cotenants=parse_duties(args.cotenants) if args.cotenants else (),
        busy_period_ms=number(args.busy_period_ms, "--busy-period-ms", limits.BUSY_PERIOD_MS),
        mps_share=None
        if args.mps_share is None
        else number(args.mps_share, "--mps-share", limits.MPS_SHARE),
        mig_profile=args.mig_profile,
        card=card,
        measured_on_profile=measured,
        cotenant_memory_mb=parse_memory(args.cotenant_memory_mb, "--cotenant-memory-mb")
        if args.cotenant_memory_mb
        else (),
        mps_memory_mb=None
        if args.mps_memory_mb is None
        else number(args.mps_memory_mb, "--mps-memory-mb", MPS_MEMORY_MB),
    )


MPS_MEMORY_MB = limits.Bound(1e-3, limits.MEMORY_MB.high)


def memory_of(args: argparse.Namespace, points: Any, curve: Any, sharing: Any) -> MemoryLimit:
    """The largest batch that fits in the memory the sharing mode leaves (SPEC §5.1), from
    the points' memory figures and the card's memory (looked up only when needed)."""
    model = memory_model(points)
    memory_gb = None
    name = args.card or (curve.card if curve is not None else None)
    # Only where the mode's memory depends on the card's (not MIG's, nor an MPS limit).
    if model is not None and name and available(sharing, None).mb is None:
        with open_store(args) as store:
            try:
                memory_gb = store.card(name).memory_gb
            except NotFound:
                memory_gb = None
    return memory_limit(model, available(sharing, memory_gb))


def run(args: argparse.Namespace) -> int:
    points, curve = read_curve_source(args)
    fitted = fit_curve(points)
    sessions = number(args.sessions, "--sessions", limits.SESSIONS)
    calibration = _calibration(args, curve)
    # A server that queues every frame may batch up to max_batch requests, beyond the sessions.
    batch = number(args.max_batch, "--max-batch", limits.MAX_BATCH) if args.max_batch else 8
    upto = max(64, int(sessions), int(batch))
    # The table and the spread a plan's runs take (``planner.plan.request``).
    per_request = curve.per_request_ms if curve is not None else 0.0
    table = model_table(fitted, upto, args.edge, per_request, calibration)
    spread = model_spread(fitted, upto, calibration, spread_on(args))
    scenario = scenario_from(args, table, curve).with_(spread=spread)
    memory = memory_of(args, points, curve, scenario.sharing)
    if not memory.fits_one:
        raise BadInput(f"{memory.needs(1)}: no batch fits, so no session can be served")
    scenario = scenario.with_(
        memory_batch_limit=memory.batch_limit, peak_upto=peak_range(max(p.batch for p in points))
    )
    if calibration is not None:
        scenario = scenario.with_(overhead_ms=calibration.overhead(scenario.overhead_ms))
    results = simulate(scenario)
    if args.frames:
        _write_frames(args.frames, results.frame_table())
        note(f"wrote {len(results.records.frame_latency)} frames to {args.frames}")
    if args.json:
        print_json({**results.as_dict(), "calibration": calibration and calibration.as_dict()})
        return 0
    _print(results)
    for line in overload_notes(results, fitted):
        print(line)
    print(
        calibration.description
        if calibration is not None
        else "not calibrated: the model's figures (planner loadtest calibrates a curve)"
    )
    return 0


def _calibration(args: argparse.Namespace, curve: Any) -> Any:
    """The calibration to simulate with: for a stored curve, --calibration's choice (by
    default its latest); points given on the command line have none."""
    choice = getattr(args, "calibration", None)
    if curve is None:
        if choice is not None and choice.strip().lower() != "none":
            raise BadInput("--calibration needs --curve: a calibration belongs to a stored curve")
        return None
    from planner.store.calibrations import resolve

    with open_store(args) as store:
        return resolve(store, choice, curve.id)


def _write_frames(path: Path, columns: dict[str, Any]) -> None:
    names = list(columns)
    try:
        with path.open("w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            writer.writerow(names)
            writer.writerows(zip(*(columns[n].tolist() for n in names), strict=True))
    except OSError as exc:
        raise BadInput(f"cannot write {path}: {exc.strerror}") from None


def _print(results: Any) -> None:
    s = results.scenario
    doc = results.as_dict()
    print(f"{s.sessions} sessions, {s.policy}, {s.sharing.label}, {s.duration_s:g} s")
    print(
        f"fps per session: mean {display.fps(doc['mean_fps'], unit=False)}, "
        f"min {display.fps(doc['min_fps'], unit=False)}, "
        f"max {display.fps(doc['max_fps'], unit=False)} (Jain {doc['jain']:.3f})"
    )
    for name, key in (("GPU latency", "latency_ms"), ("end-to-end", "e2e_latency_ms")):
        lat = doc[key]
        if lat["frames"]:
            print(
                f"{name}: p50 {display.ms(lat['p50'])}, p90 {display.ms(lat['p90'])}, "
                f"p99 {display.ms(lat['p99'])}, max {display.ms(lat['max'])} "
                f"({lat['frames']} frames)"
            )
    dropped = "rejected or timed out" if s.queue == "all" else "expired"
    print(
        f"overwritten {display.fraction(doc['overwritten_fraction'])}, {dropped} "
        f"{display.fraction(doc['expired_fraction'])}, GPU busy "
        f"{display.fraction(doc['gpu_busy_fraction'])}"
    )
    hist = ", ".join(f"{k}x{v}" for k, v in doc["batch_histogram"].items())
    print(f"batches (size x count): {hist or 'none ran'}")
    if doc["starved_sessions"]:
        print(f"starved sessions (below half the mean fps): {doc['starved_sessions']}")
    if s.memory_batch_limit is not None:
        print(f"GPU memory: no batch holds more than {s.memory_batch_limit} frames")
    growth = results.queue
    if growth is not None:
        first, last = growth.p99_first_third_ms, growth.p99_last_third_ms
        if first is not None and last is not None:
            verdict = "the queue grows" if growth.grows else "the queue keeps up"
            verdict += (
                f" (p99 {display.ms(first)} in the first third of the run, "
                f"{display.ms(last)} in the last)"
            )
        else:
            verdict = "too few frames delivered to tell whether it keeps up"
        print(
            f"server queues every frame: {verdict}; "
            f"{growth.queued_at_end:,} frames still queued at the end"
        )
    if results.cpu is not None:
        pool = results.cpu
        for name, stage in (("pre", pool.pre), ("post", pool.post)):
            if stage.jobs:
                print(
                    f"CPU {name} jobs: {stage.jobs}, threads busy "
                    f"{display.fraction(stage.busy_fraction)}, queue wait mean "
                    f"{display.ms(stage.wait_mean_ms)}, p99 {display.ms(stage.wait_p99_ms)}"
                )
        print(f"CPU threads ({pool.workers}) busy {display.fraction(pool.busy_fraction)} in all")
    stages = results.stages
    if stages is not None and stages.mean is not None and stages.tail is not None:
        print(f"end-to-end latency by stage (mean / p{stages.percentile:g} tail):")
        for part in PARTS:
            mean, tail = getattr(stages.mean, part), getattr(stages.tail, part)
            print(f"  {PART_LABELS[part]:<22} {display.ms_column(mean)} {display.ms_column(tail)}")
    sys.stdout.flush()
