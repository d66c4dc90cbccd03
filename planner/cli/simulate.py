"""``planner simulate``: one scenario in detail, under any policy and sharing mode."""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path
from typing import Any

from planner import limits
from planner.cli.output import (
    add_curve_source,
    csv_list,
    link_values,
    note,
    number,
    open_store,
    option,
    option_name,
    print_json,
    read_curve_source,
)
from planner.cli.planning import (
    add_worker_options,
    cascade_option,
    flag_spelling,
    spread_on,
    workload_options,
)
from planner.curves.fit import EDGES, FittedCurve, fit_curve
from planner.errors import BadInput, NotFound
from planner.plan.cascade import CascadeStep, models
from planner.plan.cotenants import workload_conflicts, workloads_of
from planner.plan.decoders import Decoders
from planner.plan.params import decoder_conflicts, queue_conflicts
from planner.plan.resolve import cascade_steps
from planner.views.choices import (
    MODES,
    PHASES,
    POLICIES,
    WorkerStages,
    owner_of,
    parse_duties,
    parse_memory,
    sharing_for,
    sharing_mode,
)
from planner.views.runs import Calibration, Decoding, Scenario
from planner.views.simulation import (
    FIRST_MODEL,
    memory_of,
    model_shares,
    simulate,
    simulation_scenario,
    simulation_view,
)


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
    args: argparse.Namespace,
    points: Any,
    fitted: FittedCurve,
    curve: Any = None,
    calibration: Calibration | None = None,
    cascade: tuple[CascadeStep, ...] = (),
) -> Scenario:
    """A validated scenario from parsed options (every problem reported at once), on
    ``args.edge`` of ``fitted`` (the curve of ``points``), with the calibration's figures
    if one is given, and its batches capped by the memory the sharing mode leaves."""
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
    server = curve.batcher if curve is not None else {}
    for name, (text, flag, bound) in options.items():
        if text is None:
            if name in server and name in POLICIES[args.policy].params:
                params[name] = server[name]  # the batcher of the server the curve was measured on
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
    decoding = get(decoding_from, args, sharing, curve, workers) if sharing else None
    if problems:
        raise BadInput(problems)
    memory = memory_of(points, sharing, lambda: _card_memory_gb(args, curve), cascade)
    # The table and the spread a plan's runs take (``planner.plan.request``).
    return simulation_scenario(
        fitted,
        args.edge,
        args.policy,
        int(sessions),
        sharing,
        per_request_ms=curve.per_request_ms if curve is not None else 0.0,
        calibration=calibration,
        spread=spread_on(args),
        memory=memory,
        overhead_ms=overhead,
        fps=fps,
        duration_s=duration,
        phases=args.phases,
        seed=int(seed),
        jitter_ms=jitter,
        stages=WorkerStages(**stage_values, cpu_workers=int(workers)),
        cascade=models(cascade, args.edge),
        decode=decoding,
        **params,
        **(queue or {}),
    )


def decoding_from(
    args: argparse.Namespace, sharing: Any, curve: Any, workers: Any
) -> Decoding | None:
    """The run's decode stage from ``--decode-ms``, ``--decoders``, ``--codec`` and
    ``--cpu-decode-ms`` (``planner.plan.decoders``): None without a decode time."""
    values = link_values(args, DECODE_OPTIONS)
    conflicts = decoder_conflicts({**values, "cpu_workers": workers or 0})
    if conflicts:
        raise BadInput([option_name(message) for _, message in conflicts])
    card = args.card or (curve.card if curve is not None else None)
    decoders = Decoders.given_as(values, card)
    if decoders is None:
        return None
    try:
        return decoders.decoding(sharing)
    except BadInput as exc:
        raise BadInput([option_name(p) for p in exc.problems]) from None


DECODE_OPTIONS = ("decode_ms", "decoders", "codec", "cpu_decode_ms")
"""The decode stage's options (SPEC §6.3), link parameters read by their codecs."""


QUEUE_OPTIONS = ("queue", "max_queue_size", "queue_timeout_us", "timeout_action")
"""The server's queue (``Scenario.queue``) and, under ``all``, its policy's settings."""


MODE_FLAGS = (
    "mig_profile", "cotenants", "mps_share", "cotenant_memory_mb", "mps_memory_mb",
    "cotenant_curve",
)  # fmt: skip
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
        cotenant_workloads=_workloads(args, curve),
    )


def _workloads(args: argparse.Namespace, curve: Any = None) -> Any:
    """The co-tenants ``--cotenant-curve``, ``--cotenant-batch`` and ``--cotenant-rps``
    give, their curves read from the store."""
    values = workload_options(args)
    if not values:
        return ()
    problems = [m for _, m in workload_conflicts(values)]
    if problems:
        raise BadInput(problems)
    with open_store(args) as store:
        card = curve.card if curve is not None else None
        return workloads_of(argparse.Namespace(**values), store, card)


MPS_MEMORY_MB = limits.Bound(1e-3, limits.MEMORY_MB.high)


def _card_memory_gb(args: argparse.Namespace, curve: Any) -> float | None:
    """The memory of --card, or else of the stored curve's card (None: not known)."""
    name = args.card or (curve.card if curve is not None else None)
    if not name:
        return None
    with open_store(args) as store:
        try:
            return store.card(name).memory_gb
        except NotFound:
            return None


def run(args: argparse.Namespace) -> int:
    points, curve = read_curve_source(args)
    fitted = fit_curve(points)
    calibration = _calibration(args, curve)
    scenario = scenario_from(args, points, fitted, curve, calibration, _cascade(args, curve))
    results = simulate(scenario)
    if args.frames:
        _write_frames(args.frames, results.frame_table())
        note(f"wrote {len(results.records.frame_latency)} frames to {args.frames}")
    first = curve.model if curve is not None else FIRST_MODEL
    if args.json:
        shares = model_shares(results.scenario, results.records, first)
        print_json({
            **results.as_dict(),
            "cascade_models": [m.as_dict() for m in shares] if shares else None,
            "calibration": calibration and calibration.as_dict(),
        })  # fmt: skip
        return 0
    for line in simulation_view(results, fitted, calibration=calibration, first_model=first).text:
        print(line)
    sys.stdout.flush()
    return 0


def _cascade(args: argparse.Namespace, curve: Any) -> tuple[CascadeStep, ...]:
    """The models ``--cascade`` runs after the curve's, read from the store."""
    entries = cascade_option(getattr(args, "cascade", None))
    if not entries:
        return ()
    with open_store(args) as store:
        return cascade_steps(entries, store, curve.card if curve is not None else None)


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
