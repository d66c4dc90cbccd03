"""Reading ``planner loadtest``'s options: the load test's (``LoadTestOptions``), the
criteria of its seat caps, a server's (``ServerOptions``), an import's scenario, and the
files it writes, every problem at once. ``planner.cli.loadtest`` registers the options and
runs the command."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from planner import limits
from planner.cli.output import number
from planner.errors import BadInput
from planner.validate.options import LoadTestOptions, parse_sessions
from planner.views.choices import POLICIES, STAGE_FIELDS

DEFAULTS = LoadTestOptions()
SECONDS = limits.Bound(0.0, 86_400.0, above_low=True)
"""The range of ``--call-timeout-s`` and ``--time-limit-s``: above 0 s, at most a day."""
IMPORT_SEEDS = limits.DEFAULT_SEEDS
"""Phase draws an imported load test is predicted on, as a recommendation makes them."""
CALIBRATION_HELP = (
    "a calibration to predict with beside the plain prediction: a calibration id, latest "
    "(the curve's newest) or none (default: none; the load test judges the model itself)"
)


def _camera(text: str) -> tuple[int, int]:
    from planner.curves.curve import parse_resolution

    try:
        return parse_resolution(text)
    except BadInput:
        raise BadInput(f"--camera {text!r} is not WIDTHxHEIGHT, e.g. 1280x720") from None


def _get(problems: list[str], fn: Any, *a: Any) -> Any:
    try:
        return fn(*a)
    except BadInput as exc:
        problems.extend(exc.problems)
        return None


def options_from_args(args: argparse.Namespace) -> LoadTestOptions:
    """The run's options, every problem at once."""
    from planner.cli.measure import options_from_args as measure_options

    problems: list[str] = []
    values: dict[str, Any] = {}
    if args.sessions is not None:
        values["sessions"] = _get(problems, parse_sessions, args.sessions)
    if args.policies is not None:
        values["policies"] = tuple(p.strip() for p in args.policies.split(",") if p.strip())
        unknown = [p for p in values["policies"] if p not in POLICIES]
        if unknown or not values["policies"]:
            problems.append(
                f"--policies must be some of {', '.join(POLICIES)}"
                + (f" (not {', '.join(unknown)})" if unknown else "")
            )
    numbers = {
        "fps": limits.FPS,
        "duration_s": limits.DURATION_S,
        "seed": limits.SEED,
        "seeds": limits.SEEDS,
        "jitter_ms": limits.JITTER_MS,
        "network_ms": limits.STAGE_MS,
        "overhead_ms": limits.OVERHEAD_MS,
        "max_batch": limits.MAX_BATCH,
        "max_queue_delay_us": limits.MAX_QUEUE_DELAY_US,
        "slo_ms": limits.SLO_MS,
        "cpu_workers": limits.LOADTEST_CPU_WORKERS,
        "threads": limits.TORCH_THREADS,
    }
    for name, bound in numbers.items():
        text = getattr(args, name)
        if text is not None:
            values[name] = _get(problems, number, text, f"--{name.replace('_', '-')}", bound)
    # The worker's stages are one value; a stage left out keeps the load test's default.
    stages = {name: values.pop(name) for name in STAGE_FIELDS if name in values}
    if args.phases is not None:
        values["phases"] = args.phases
    if args.camera is not None:
        values["camera"] = args.camera
        if _get(problems, _camera, args.camera) is None:
            values.pop("camera")
    elif args.cpu_workers is not None:
        problems.append("--cpu-workers runs the CPU work of --camera; give --camera WxH too")
    if args.pre_ms is not None or args.post_ms is not None:
        problems.append(
            "--pre-ms and --post-ms describe another worker (import); the reference worker "
            "does real CPU work with --camera and measures what it costs"
        )
    if args.policy is not None:
        problems.append("--policy is for import; a load test takes --policies")
    queued = [f"--{n.replace('_', '-')}" for n in QUEUE_OPTIONS if getattr(args, n, None)]
    if queued:
        problems.append(
            f"{', '.join(queued)}: for import; the reference worker keeps each session's "
            "newest frame, and a server's load test queues every frame, as the server does"
        )
    if args.points is not None:
        problems.append("--points is for import; a load test measures its curve or takes --curve")
    measure_args = argparse.Namespace(
        model_file=args.model_file,
        input_shape=args.input_shape,
        model=args.model,
        resolution=args.resolution,
        device=args.device,
        precision=args.precision,
        batches=args.batches,
        warmup=args.warmup or "10",
        rounds=args.rounds or "3",
        repetitions=args.repetitions or "30",
        channels_last=args.channels_last,
        card=args.card,
        mig_profile=args.mig_profile,
    )
    measure = _get(problems, measure_options, measure_args)
    if problems:
        raise BadInput(problems)
    try:
        return LoadTestOptions(measure=measure, stages=replace(DEFAULTS.stages, **stages), **values)
    except BadInput as exc:
        raise BadInput(exc.problems) from None


def criteria_from_args(args: argparse.Namespace) -> Any:
    from planner.plan.request import Criteria

    problems: list[str] = []
    values: dict[str, Any] = {}
    for name, bound in (
        ("budget_ms", limits.BUDGET_MS),
        ("percentile", limits.PERCENTILE),
        ("min_fps", limits.MIN_FPS),
        ("max_overwritten", limits.MAX_OVERWRITTEN),
    ):
        text = getattr(args, name)
        if text is not None:
            values[name] = _get(problems, number, text, f"--{name.replace('_', '-')}", bound)
    if problems:
        raise BadInput(problems)
    return Criteria(**values)


def calibration_option(store: Any, choice: str | None, curve_id: str) -> Any:
    """The calibration ``--calibration`` names for this curve (None: none); ``latest``
    must find one here, since the user asked for it."""
    from planner.store.calibrations import resolve

    found = resolve(store, choice, curve_id, default="none")
    if found is None and choice is not None and choice.strip().lower() == "latest":
        raise BadInput(f"--calibration latest: the curve {curve_id} has no calibration yet")
    return found


def find_cap(args: argparse.Namespace, options: LoadTestOptions) -> int | None:
    """``--find-cap``'s largest session count (None: no search)."""
    if args.find_cap is None:
        return None
    upto = int(number(args.find_cap, "--find-cap", limits.Bound(1, 64, whole=True)))
    if options.seed != 0:
        raise BadInput(
            "--find-cap draws seeds from 0, as the recommendation does; leave out --seed"
        )
    return upto


SERVER_REFUSED = (
    "camera", "cpu_workers", "threads", "model_file", "resolution", "device", "precision",
    "mig_profile", "curve", "calibration", "points", "policy", "max_batch",
    "max_queue_delay_us",
)  # fmt: skip
"""Options that do not apply to a server's load test: the server does its own work on its
own device, and its batcher's settings are read from the model's config."""
SERVER_ONLY = ("call_timeout_s", "time_limit_s", "header")


def server_options_from_args(args: argparse.Namespace) -> tuple[Any, Any]:
    """The load test's options and the server's (``ServerOptions``), every problem at
    once."""
    from planner.validate.server.client import parse_header, parse_shape
    from planner.validate.server.loadtest import POLICY, ServerOptions
    from planner.validate.server.target import parse_target

    problems: list[str] = []
    target = _get(problems, parse_target, args.server)
    for name in SERVER_REFUSED:
        if getattr(args, name, None) not in (None, False):
            why = (
                "the server's batcher settings are read from the model's config"
                if name in ("max_batch", "max_queue_delay_us", "policy")
                else "the server runs the model on its own device"
            )
            problems.append(f"--{name.replace('_', '-')} does not apply to --target ({why})")
    if args.channels_last:
        problems.append("--channels-last does not apply to --target (the server runs the model)")
    if args.policies is not None and [p.strip() for p in args.policies.split(",")] != [POLICY]:
        problems.append(
            f"--policies: a server's load test predicts with {POLICY}, the server's batcher "
            "(leave --policies out)"
        )
    if args.format != "auto":
        problems.append("--format is for import")
    if not args.model:
        problems.append("--target needs --model NAME, the model's name on the server")
    if args.rounds is not None:
        problems.append(
            "--rounds does not apply to --target (--repetitions gives the timed calls per "
            "batch size)"
        )
    readers: dict[str, Callable[[Any], Any]] = {  # ServerOptions has the defaults
        "input_shape": parse_shape,
        "batches": _batches,
        "warmup": lambda text: _count(text, "--warmup", 0),
        "repetitions": lambda text: _count(text, "--repetitions", 1),
        "call_timeout_s": lambda text: number(text, "--call-timeout-s", SECONDS),
        "time_limit_s": lambda text: number(text, "--time-limit-s", SECONDS),
        "headers": lambda texts: tuple(parse_header(t) for t in texts),
    }
    given = {name: getattr(args, "header" if name == "headers" else name) for name in readers}
    values = {name: _get(problems, readers[name], v) for name, v in given.items() if v is not None}
    plain = argparse.Namespace(**vars(args))
    for name in ("model", "input_shape", "batches", "warmup", "rounds", "repetitions",
                 "policies", *SERVER_REFUSED):  # fmt: skip
        setattr(plain, name, None)
    options = _get(problems, options_from_args, plain)
    if problems:
        raise BadInput(problems)
    server = ServerOptions(target=target, model=args.model, card=args.card, **values)
    return replace(options, policies=(POLICY,)), server


def _batches(text: str) -> Any:
    from planner.measure.options import parse_batches

    return parse_batches(text)


def _count(text: str, flag: str, low: int) -> int:
    return int(number(text, flag, limits.Bound(low, 10_000, whole=True)))


IMPORT_BOUNDS = {
    "fps": limits.FPS, "duration_s": limits.DURATION_S, "seed": limits.SEED,
    "jitter_ms": limits.JITTER_MS, "overhead_ms": limits.OVERHEAD_MS,
    "network_ms": limits.STAGE_MS, "pre_ms": limits.STAGE_MS, "post_ms": limits.STAGE_MS,
    "cpu_workers": limits.CPU_WORKERS, "max_batch": limits.MAX_BATCH,
    "max_queue_delay_us": limits.MAX_QUEUE_DELAY_US, "slo_ms": limits.SLO_MS,
}  # fmt: skip
"""The scenario options an import reads, each against its range; the rest keep the
scenario's defaults (the library's, so none is written here)."""


QUEUE_OPTIONS = ("queue", "max_queue_size", "queue_timeout_us", "timeout_action")
"""The server's queue settings an import takes, as ``planner simulate`` does."""


def add_import_queue_options(parser: argparse.ArgumentParser) -> None:
    """``--queue`` and, under ``--queue all``, the queue's settings: what the server whose
    load test is imported keeps of a session's frames (the link parameters' meanings)."""
    from planner.links.parameters import PARAMETERS

    group = parser.add_argument_group("import: the server's queue (as planner simulate)")
    for name in QUEUE_OPTIONS:
        group.add_argument(f"--{name.replace('_', '-')}", help=PARAMETERS[name].doc)


def queue_values(args: argparse.Namespace) -> dict[str, Any]:
    """The queue options given, read by their link parameters' codecs; BadInput for one
    that does not read, or settings that do not go together (as ``planner simulate``)."""
    from planner.cli.output import link_values
    from planner.cli.planning import flag_spelling
    from planner.plan.params import queue_conflicts

    problems: list[str] = []
    values: dict[str, Any] = {}
    for name in QUEUE_OPTIONS:  # each on its own: one that does not read hides nothing
        values.update(_get(problems, link_values, args, (name,)) or {})
    problems += [message for _, message in queue_conflicts(values, flag_spelling)]
    if problems:
        raise BadInput(problems)
    return values


def import_scenario(args: argparse.Namespace, curve: Any, store: Any) -> Any:
    from planner.validate.imported import imported_scenario

    missing = [
        f for f, v in (("--sessions", args.sessions), ("--policy", args.policy)) if v is None
    ]
    if missing:
        raise BadInput(f"import needs {' and '.join(missing)} for the scenario of the file's run")
    problems: list[str] = []
    sessions = _get(problems, number, args.sessions, "--sessions", limits.SESSIONS)
    values = {
        name: _get(problems, number, getattr(args, name), f"--{name.replace('_', '-')}", bound)
        for name, bound in IMPORT_BOUNDS.items()
        if getattr(args, name) is not None
    }
    if args.phases is not None:
        values["phases"] = args.phases
    values.update(_get(problems, queue_values, args) or {})
    for name, value in curve.batcher.items():  # the server the curve was measured on
        if name in POLICIES[args.policy].params:
            values.setdefault(name, int(value) if name == "max_batch" else value)
    if problems:
        raise BadInput(problems)
    applied = calibration_option(store, args.calibration, curve.id) if args.curve else None
    if args.calibration and not args.curve:
        raise BadInput("--calibration needs --curve (a calibration belongs to a stored curve)")
    return imported_scenario(curve, int(sessions), args.policy, values, applied)


def check_files(args: argparse.Namespace) -> Any:
    """BadInput for an --out or --report file that cannot be written (checked before any
    run); the criteria the report's seat caps are judged by."""
    path = args.out
    if path is not None and path.is_dir():
        raise BadInput(f"--out {path} is a folder; give a file name ending in .csv")
    if path is not None and not path.parent.is_dir():
        raise BadInput(f"--out {path}: the folder {path.parent} does not exist")
    path = args.report
    if path is not None and (path.is_dir() or not path.parent.is_dir()):
        raise BadInput(f"--report {path}: give a file in a folder that exists")
    return None if path is None else criteria_from_args(args)
