"""``planner loadtest``: the reference worker against the simulator's prediction.

planner loadtest [run options]            measure, run, predict, compare, store
planner loadtest --target URL --model NAME  the same against a KServe v2 (Triton) server
planner loadtest import FILE [options]    compare another worker's load test
planner loadtest list                     the stored load tests
planner loadtest show ID                  one stored load test, run by run
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from planner import display, limits
from planner.cli.output import StatusLine, note, number, open_store, print_json, table
from planner.errors import BadInput
from planner.sim.policies import POLICIES
from planner.sim.scenario import PHASES
from planner.sim.stages import NO_STAGES, STAGE_FIELDS, WorkerStages
from planner.validate.measured_vs_predicted import Figure
from planner.validate.options import MAX_LOADTEST_SESSIONS, LoadTestOptions
from planner.validate.runs import LoadTest, Progress

INTERRUPTED = 130
ACTIONS = ("import", "list", "show")
DEFAULTS = LoadTestOptions()
IMPORT_SEEDS = limits.DEFAULT_SEEDS
"""Phase draws an imported load test is predicted on, as a recommendation makes them."""
CALIBRATION_HELP = (
    "a calibration to predict with beside the plain prediction: a calibration id, latest "
    "(the curve's newest) or none (default: none; the load test judges the model itself)"
)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "loadtest",
        help="serve sessions for real on this device and compare with the prediction",
        description=(
            "Run the reference worker: real-time sessions on this machine's GPU (or CPU), "
            "newest frame only, the simulator's own policy code deciding every batch. It "
            "measures the batch curve first (or uses --curve), runs each session count "
            "under each policy, simulates the same scenarios, prints measured and predicted "
            "side by side with relative errors, fits a calibration of the curve and stores "
            "everything. `planner loadtest import FILE` compares another worker's load test "
            "(per-frame records, per-session summaries, or a bundle written by "
            "scripts/accuracy_gpu.py); `list` and `show ID` read stored ones. Needs PyTorch "
            "to run (not to import). With --target grpc://HOST:PORT (or http://) and --model "
            "NAME it drives a running KServe v2 server such as Triton instead: it measures the "
            "model's batch curve there two ways, sends each session count's frames at their "
            "capture times, one request each, reads the server's own statistics, and compares "
            "with the prediction under the server's dynamic batcher (needs the server extra)."
        ),
    )
    parser.add_argument("action", nargs="?", choices=ACTIONS, help="import, list or show")
    parser.add_argument("target", nargs="?", help="import: the file or bundle; show: the id")
    runs = parser.add_argument_group("runs")
    runs.add_argument(
        "--sessions",
        help="session counts, e.g. 1,2,4 or 1-8 (import: the one count of the file's run) "
        f"(default {','.join(map(str, DEFAULTS.sessions))})",
    )
    runs.add_argument(
        "--policies",
        help=f"policies, from {', '.join(POLICIES)} (default {','.join(DEFAULTS.policies)})",
    )
    runs.add_argument("--policy", choices=list(POLICIES), help="import: the file's policy")
    runs.add_argument("--fps", help=f"frames per second per session (default {DEFAULTS.fps:g})")
    runs.add_argument("--duration-s", help=f"seconds per run (default {DEFAULTS.duration_s:g})")
    runs.add_argument("--phases", choices=PHASES, help=f"phase model (default {DEFAULTS.phases})")
    runs.add_argument("--seed", help=f"first seed (default {DEFAULTS.seed})")
    runs.add_argument(
        "--seeds",
        help="seeds per session count (import: phase draws predicted; default "
        f"{DEFAULTS.seeds}, {IMPORT_SEEDS})",
    )
    runs.add_argument(
        "--jitter-ms", help=f"arrival jitter (default {display.ms(DEFAULTS.jitter_ms)})"
    )
    runs.add_argument(
        "--network-ms",
        help=f"one-way network delay (default {display.ms(DEFAULTS.stages.network_ms)})",
    )
    runs.add_argument(
        "--overhead-ms", help=f"per-frame overhead (default {display.ms(DEFAULTS.overhead_ms)})"
    )
    runs.add_argument("--max-batch", help="max-batch and triton: largest batch B")
    runs.add_argument("--max-queue-delay-us", help="triton: longest wait for a fuller batch, µs")
    runs.add_argument("--slo-ms", help="aimd and deadline: GPU-side objective, ms")
    cpu = parser.add_argument_group("CPU work")
    cpu.add_argument(
        "--camera",
        metavar="WxH",
        help="real pre work: a uint8 camera frame of this size resized and normalised per "
        "frame, and the heatmap's arg-max as post work, on --cpu-workers threads",
    )
    cpu.add_argument(
        "--cpu-workers",
        help=f"threads for the CPU work (default {DEFAULTS.stages.cpu_workers}; import: "
        f"{NO_STAGES.cpu_workers}, unlimited)",
    )
    cpu.add_argument(
        "--threads", help="PyTorch's CPU threads during the test (default: PyTorch's own)"
    )
    cpu.add_argument("--pre-ms", help="import: the other worker's CPU work before the GPU, ms")
    cpu.add_argument("--post-ms", help="import: its CPU work after the GPU, ms")
    model = parser.add_argument_group("model and device (as planner measure)")
    model.add_argument("--model-file", type=Path, metavar="FILE")
    model.add_argument("--input-shape", metavar="C,H,W")
    model.add_argument("--model", metavar="NAME", help="model name for the measured curve")
    model.add_argument(
        "--resolution", metavar="WxH", help="reference model input (default 512x288)"
    )
    model.add_argument("--device", help="cuda, cpu or mps (default: CUDA if present, else CPU)")
    model.add_argument("--precision", help="one of fp32, fp16, bf16")
    model.add_argument("--batches", help="batch sizes to measure (default: up to the sessions)")
    model.add_argument("--warmup", help="warm-up calls per batch size (default 10)")
    model.add_argument("--rounds", help="timed rounds per batch size (default 3)")
    model.add_argument("--repetitions", help="calls per round (default 30)")
    model.add_argument("--channels-last", action="store_true")
    model.add_argument("--card", help="card name for the measured curve")
    model.add_argument("--mig-profile", help="MIG profile the device is")
    source = model.add_mutually_exclusive_group()
    source.add_argument(
        "--curve", metavar="ID", help="predict on this stored curve instead of measuring one"
    )
    source.add_argument("--points", metavar="B:MS,...", help="import: predict on these points")
    model.add_argument("--calibration", help=CALIBRATION_HELP)
    server = parser.add_argument_group("a KServe v2 server (Triton)")
    server.add_argument(
        "--target",
        dest="server",
        metavar="URL",
        help="drive this server instead of the reference worker: grpc://HOST:PORT or "
        "http://HOST:PORT; --model names the model on it, --input-shape gives one frame's "
        "shape where the model leaves it open, --batches, --warmup (default 5) and "
        "--repetitions (default 30) how its curve is measured, --card the name the curves "
        "get (default: the server's address)",
    )
    cap = parser.add_argument_group("measured seat cap")
    cap.add_argument(
        "--find-cap",
        nargs="?",
        const="16",
        metavar="MAX",
        help="also search each policy's seat cap on the worker, upward from 1 session and "
        "stopping at the first failure, up to MAX sessions (default 16), beside the "
        "predicted cap",
    )
    cap.add_argument("--budget-ms", help="latency budget, ms end to end (default 50)")
    cap.add_argument("--percentile", help="percentile of the budget (default 99)")
    cap.add_argument("--min-fps", help="slowest session's fps floor (default 28.5)")
    cap.add_argument("--max-overwritten", help="largest overwritten fraction")
    out = parser.add_argument_group("output")
    out.add_argument("--out", type=Path, metavar="FILE", help="write every frame's record as CSV")
    out.add_argument(
        "--report",
        type=Path,
        metavar="FILE",
        help="write the accuracy report (Markdown, as docs/accuracy.md) of the load test: "
        "errors over the loaded runs, a calibration fitted on odd session counts judged on "
        "even ones, and the seat caps under --budget-ms, --percentile and --min-fps",
    )
    out.add_argument("--format", default="auto", help="import: auto, bundle, frames or summary")
    out.add_argument("--json", action="store_true", help="print the summary as JSON")
    parser.set_defaults(handler=run)


# ---------------------------------------------------------------------------------------
# Reading the options


def parse_sessions(text: str) -> tuple[int, ...]:
    """``"1,2,4"`` or ``"1-8"`` (or both: ``"1-4,8"``) as session counts."""
    counts: list[int] = []
    for item in (i.strip() for i in text.split(",")):
        if not item:
            continue
        low, dash, high = item.partition("-")
        try:
            first = int(low)
            last = int(high) if dash else first
        except ValueError:
            raise BadInput(f"--sessions {item!r} is not a count or a range such as 1-8") from None
        if not (1 <= first <= last <= MAX_LOADTEST_SESSIONS):
            raise BadInput(
                f"--sessions {item!r}: counts must run from 1 to {MAX_LOADTEST_SESSIONS}"
            )
        counts.extend(range(first, last + 1))
    if not counts:
        raise BadInput("--sessions is empty; give counts such as 1,2,4 or 1-8")
    return tuple(sorted(set(counts)))


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


def calibration_of(store: Any, choice: str | None, curve_id: str) -> Any:
    """The calibration ``--calibration`` names for this curve (None: none); ``latest``
    must find one here, since the user asked for it."""
    from planner.store.calibrations import resolve

    found = resolve(store, choice, curve_id, default="none")
    if found is None and choice is not None and choice.strip().lower() == "latest":
        raise BadInput(f"--calibration latest: the curve {curve_id} has no calibration yet")
    return found


def _check_out(path: Path | None) -> None:
    if path is None:
        return
    if path.is_dir():
        raise BadInput(f"--out {path} is a folder; give a file name ending in .csv")
    if not path.parent.is_dir():
        raise BadInput(f"--out {path}: the folder {path.parent} does not exist")


# ---------------------------------------------------------------------------------------
# Commands


def run(args: argparse.Namespace) -> int:
    if getattr(args, "server", None) is not None:
        if args.action is not None:
            raise BadInput(f"--target runs a load test; it does not go with {args.action}")
        return _run_server(args)
    if args.action == "list":
        return _list(args)
    if args.action == "show":
        return _show(args)
    if args.action == "import":
        return _import(args)
    if args.target is not None:
        raise BadInput(f"unexpected {args.target!r}; did you mean `planner loadtest import FILE`?")
    return _run(args)


def _run(args: argparse.Namespace) -> int:
    from planner.validate.loadtest import run_loadtest
    from planner.validate.loadtest_store import save_loadtest

    options = options_from_args(args)
    criteria = criteria_from_args(args)
    upto = None
    if args.find_cap is not None:
        upto = int(number(args.find_cap, "--find-cap", limits.Bound(1, 64, whole=True)))
        if options.seed != 0:
            raise BadInput(
                "--find-cap draws seeds from 0, as the recommendation does; leave out --seed"
            )
    if args.format != "auto":
        raise BadInput("--format is for import")
    _check_out(args.out)
    _check_report(args)
    with open_store(args) as store:
        store.require_writable()
        curve = store.curve(args.curve) if args.curve else None
        applied = None
        if args.calibration is not None:
            if curve is None:
                raise BadInput(
                    "--calibration needs --curve (a calibration belongs to a stored curve)"
                )
            applied = calibration_of(store, args.calibration, curve.id)
    from planner.measure.devices import require_torch, resolve_device

    require_torch()
    resolve_device(options.measure.device)
    bar = Bar(sys.stderr)
    try:
        test = run_loadtest(
            options,
            curve=curve,
            calibration=applied,
            progress=bar,
            criteria=criteria,
            find_cap_upto=upto,
        )
    finally:
        bar.close()
    if not test.runs:
        note("interrupted before any run finished; nothing stored")
        return INTERRUPTED
    if hasattr(args, "argv"):  # what the accuracy report cites, however it is re-made
        import shlex

        test.environment["command"] = shlex.join(["planner", *args.argv])
    with open_store(args) as store:
        if curve is None:
            store.add_curves([test.curve])
        test = save_loadtest(store, test)
    _stored(args, test, f"stored load test {test.id} (curve {test.curve.id})")
    if test.interrupted:
        note("interrupted: the runs finished before Ctrl-C were kept")
        return INTERRUPTED
    return 0


SERVER_REFUSED = (
    "camera", "cpu_workers", "threads", "model_file", "resolution", "device", "precision",
    "mig_profile", "curve", "calibration", "points", "policy", "max_batch",
    "max_queue_delay_us",
)  # fmt: skip
"""Options that do not apply to a server's load test: the server does its own work on its
own device, and its batcher's settings are read from the model's config."""


def server_options_from_args(args: argparse.Namespace) -> tuple[Any, Any]:
    """The load test's options and the server's (``ServerOptions``), every problem at
    once."""
    from planner.validate.server.client import parse_shape
    from planner.validate.server.loadtest import POLICY, ServerOptions
    from planner.validate.server.target import parse_target

    problems: list[str] = []
    target = _get(problems, parse_target, args.server)
    for name in SERVER_REFUSED:
        value = getattr(args, name, None)
        if value is not None and value is not False:
            flag = name.replace("_", "-")
            why = (
                "the server's batcher settings are read from the model's config"
                if name in ("max_batch", "max_queue_delay_us", "policy")
                else "the server runs the model on its own device"
            )
            problems.append(f"--{flag} does not apply to --target ({why})")
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
    shape = None if args.input_shape is None else _get(problems, parse_shape, args.input_shape)
    batches = None
    if args.batches is not None:
        from planner.measure.options import parse_batches

        batches = _get(problems, parse_batches, args.batches)
    if args.rounds is not None:
        problems.append(
            "--rounds does not apply to --target (--repetitions gives the timed calls per "
            "batch size)"
        )
    counts = {}  # those given; ServerOptions has the defaults
    for name, low in (("warmup", 0), ("repetitions", 1)):
        text = getattr(args, name)
        if text is not None:
            bound = limits.Bound(low, 10_000, whole=True)
            counts[name] = _get(problems, number, text, f"--{name}", bound)
    plain = argparse.Namespace(**vars(args))
    for name in ("model", "input_shape", "batches", "warmup", "rounds", "repetitions", "policies"):
        setattr(plain, name, None)
    for name in SERVER_REFUSED:
        setattr(plain, name, None)
    options = _get(problems, options_from_args, plain)
    if problems:
        raise BadInput(problems)
    server = ServerOptions(
        target=target,
        model=args.model,
        input_shape=shape,
        batches=batches,
        card=args.card,
        **{name: int(value) for name, value in counts.items()},
    )
    return replace(options, policies=(POLICY,)), server


def _run_server(args: argparse.Namespace) -> int:
    from planner.validate.loadtest_store import save_loadtest
    from planner.validate.server.loadtest import run_server_loadtest

    options, server = server_options_from_args(args)
    criteria = criteria_from_args(args)
    upto = None
    if args.find_cap is not None:
        upto = int(number(args.find_cap, "--find-cap", limits.Bound(1, 64, whole=True)))
        if options.seed != 0:
            raise BadInput(
                "--find-cap draws seeds from 0, as the recommendation does; leave out --seed"
            )
    _check_out(args.out)
    _check_report(args)
    with open_store(args) as store:
        store.require_writable()
    bar = Bar(sys.stderr)
    try:
        done = run_server_loadtest(
            options, server, progress=bar, criteria=criteria, find_cap_upto=upto
        )
    finally:
        bar.close()
    test = done.test
    if not test.runs:
        note("interrupted before any run finished; nothing stored")
        return INTERRUPTED
    if hasattr(args, "argv"):
        import shlex

        test.environment["command"] = shlex.join(["planner", *args.argv])
    with open_store(args) as store:
        store.add_curves(list(done.curves))
        test = save_loadtest(store, test)
    single, concurrent = done.curves
    _stored(
        args,
        test,
        f"stored load test {test.id} ({test.source}; curves {single.id}, one request of b "
        f"frames, and {concurrent.id}, b requests of one frame)",
    )
    if test.interrupted:
        note("interrupted: the runs finished before Ctrl-C were kept")
        return INTERRUPTED
    return 0


def _import(args: argparse.Namespace) -> int:
    from planner.curves.fit import fit_curve
    from planner.sim.scenario import Scenario
    from planner.validate.loadtest_import import import_file
    from planner.validate.loadtest_store import save_loadtest

    if args.target is None:
        raise BadInput("give the file to import: planner loadtest import FILE")
    path = Path(args.target)
    problems: list[str] = []
    for flag in ("camera", "find_cap", "policies", "threads", "model_file", "batches"):
        if getattr(args, flag) is not None:
            problems.append(f"--{flag.replace('_', '-')} does not apply to import")
    if problems:
        raise BadInput(problems)
    _check_out(args.out)
    _check_report(args)
    with open_store(args) as store:
        store.require_writable()
        curve = None
        if args.curve:
            curve = store.curve(args.curve)
        elif args.points:
            from planner.curves.curve import make_curve, parse_points_option

            curve = make_curve(
                model="unnamed model",
                card=args.card or "unnamed card",
                points=parse_points_option(args.points),
                source="uploaded",
            )
        scenario = None
        seeds = int(number(args.seeds or str(IMPORT_SEEDS), "--seeds", limits.SEEDS))
        if curve is not None:
            scenario = _import_scenario(args, curve, Scenario, fit_curve, store)
        test = import_file(path, scenario, curve, seeds, args.format)
        store.add_curves([test.curve])
        test = save_loadtest(store, test)
    _stored(args, test, f"stored load test {test.id} ({test.source}, curve {test.curve.id})")
    return 0


def _stored(args: argparse.Namespace, test: LoadTest, message: str) -> None:
    """Say what was stored, write the files asked for, and print the comparison."""
    note(message)
    if test.calibration is not None:
        note(f"stored calibration {test.calibration.id}: {test.calibration.description}")
    _write_out(args.out, test)
    _write_report(args, test)
    _report(args, test)


def _import_scenario(
    args: argparse.Namespace, curve: Any, scenario_class: Any, fit: Any, store: Any
) -> Any:
    problems: list[str] = []
    missing = [
        f for f, v in (("--sessions", args.sessions), ("--policy", args.policy)) if v is None
    ]
    if missing:
        raise BadInput(f"import needs {' and '.join(missing)} for the scenario of the file's run")
    sessions = _get(problems, number, args.sessions, "--sessions", limits.SESSIONS)

    # The options given, each read against its range; the rest keep the scenario's
    # defaults (the library's, so none is written here).
    bounds = {
        "fps": limits.FPS,
        "duration_s": limits.DURATION_S,
        "seed": limits.SEED,
        "jitter_ms": limits.JITTER_MS,
        "overhead_ms": limits.OVERHEAD_MS,
        "network_ms": limits.STAGE_MS,
        "pre_ms": limits.STAGE_MS,
        "post_ms": limits.STAGE_MS,
        "cpu_workers": limits.CPU_WORKERS,
        "max_batch": limits.MAX_BATCH,
        "max_queue_delay_us": limits.MAX_QUEUE_DELAY_US,
        "slo_ms": limits.SLO_MS,
    }
    values = {
        name: _get(problems, number, getattr(args, name), f"--{name.replace('_', '-')}", bound)
        for name, bound in bounds.items()
        if getattr(args, name) is not None
    }
    if args.phases is not None:
        values["phases"] = args.phases
    if problems:
        raise BadInput(problems)
    if "fps" in values:
        values["fps"] = (values["fps"],)
    values["stages"] = WorkerStages(
        **{name: values.pop(name) for name in STAGE_FIELDS if name in values}
    )
    n = int(sessions)
    table = tuple(float(v) for v in fit(curve.points).table(max(64, n)))
    scenario = scenario_class(latency_ms=table, sessions=n, policy=args.policy, **values)
    applied = calibration_of(store, args.calibration, curve.id) if args.curve else None
    if args.calibration and not args.curve:
        raise BadInput("--calibration needs --curve (a calibration belongs to a stored curve)")
    return scenario if applied is None else applied.apply(scenario)


def _list(args: argparse.Namespace) -> int:
    from planner.validate.loadtest_store import loadtests

    with open_store(args) as store:
        rows = loadtests(store)
    if args.json:
        print_json([{**r, "created_at": str(r["created_at"])} for r in rows])
        return 0
    if not rows:
        print("no load tests stored yet: run `planner loadtest` or `planner loadtest import FILE`")
        return 0
    print(
        table(
            [
                (
                    r["id"],
                    str(r["created_at"]),
                    r["source"],
                    r["curve_id"],
                    r["runs"],
                    "yes" if r["interrupted"] else "",
                    r["description"],
                )
                for r in rows
            ],
            ("id", "when (UTC)", "source", "curve", "runs", "interrupted", "description"),
        )
    )
    return 0


def _show(args: argparse.Namespace) -> int:
    from planner.validate.loadtest_store import load_loadtest

    if args.target is None:
        raise BadInput("give the id of a stored load test: planner loadtest show ID")
    ident = int(number(args.target, "load test id", limits.Bound(1, 2**31 - 1, whole=True)))
    _check_out(args.out)
    _check_report(args)
    with open_store(args) as store:
        wanted = args.out is not None or args.report is not None
        test = load_loadtest(store, ident, records=wanted)
    _write_out(args.out, test)
    _write_report(args, test)
    _report(args, test)
    return 0


# ---------------------------------------------------------------------------------------
# Output


def summary(test: LoadTest) -> dict[str, Any]:
    """The document ``--json`` prints."""
    import numpy as np

    late = test.lateness_ms
    return {
        "id": test.id,
        "source": test.source,
        "curve": test.curve.id,
        "curve_label": test.curve.label,
        "options": test.options.as_dict(),
        "pre_ms": test.pre_ms,
        "post_ms": test.post_ms,
        "environment": test.environment,
        "interrupted": test.interrupted,
        "runs": [
            {
                "sessions": r.sessions,
                "policy": r.policy,
                "seed": r.scenario.seed,
                "loaded": r.loaded,
                "measured": r.measured.as_dict(),
                "predicted": r.predicted.as_dict(),
                "calibrated": None if r.calibrated is None else r.calibrated.as_dict(),
                "figures": [f.as_dict() for f in r.figures()],
            }
            for r in test.runs
        ],
        "calibration": None if test.calibration is None else test.calibration.as_dict(),
        "applied_calibration": None if test.applied is None else test.applied.as_dict(),
        "caps": [c.as_dict() for c in test.caps],
        "lateness_ms": None
        if late.size == 0
        else {
            "p50": float(np.percentile(late, 50)),
            "p99": float(np.percentile(late, 99)),
            "max": float(late.max()),
            "arrivals": int(late.size),
        },
    }


def _cell(figure: Figure) -> str:
    m, p = figure.measured, figure.predicted
    if m is None and p is None:
        return "-"
    unit = figure.metric.unit

    def show(value: float) -> str:
        if unit == "fraction":
            return display.fraction(value)
        return display.fps(value, unit=False) if unit == "fps" else display.ms(value, unit=False)

    measured = "?" if m is None else show(m[0]) if m[0] == m[1] else f"{show(m[0])}–{show(m[1])}"
    predicted = "?" if p is None else show(p)
    return f"{measured} / {predicted} ({figure.verdict})"


def _report(args: argparse.Namespace, test: LoadTest) -> None:
    if args.json:
        print_json(summary(test))
        return
    import numpy as np

    print(f"load test {test.id}: {test.source}, curve {test.curve.label} ({test.curve.id})")
    if test.pre_ms or test.post_ms:
        print(
            f"CPU work per frame: pre {display.ms(test.pre_ms)}, post {display.ms(test.post_ms)} "
            f"(measured here, given to the simulator)"
        )
    names = (
        "min_fps",
        "mean_fps",
        "e2e_p50_ms",
        "e2e_p99_ms",
        "overwritten_fraction",
        "gpu_busy_fraction",
    )
    header = (
        "sessions",
        "policy",
        "slowest fps",
        "mean fps",
        "p50 ms",
        "p99 ms",
        "overwritten",
        "GPU busy",
    )
    for calibrated in (False, True):
        if calibrated and not any(r.calibrated for r in test.runs):
            continue
        rows = []
        for r in test.runs:
            figures = {f.metric.name: f for f in r.figures(calibrated)}
            rows.append((r.sessions, r.policy, *(_cell(figures[n]) for n in names)))
        what = "calibrated prediction" if calibrated else "predicted"
        print(f"measured / {what} (relative error, or whether inside a measured range):")
        print(table(rows, header))
    late = test.lateness_ms
    if late.size:
        p50, p99 = np.percentile(late, [50, 99])
        print(
            f"arrival lateness: p50 {display.ms(p50)}, p99 {display.ms(p99)}, "
            f"max {display.ms(late.max())} "
            f"over {late.size:,} arrivals"
        )
    for cap in test.caps:
        verdict = "agrees" if cap.agrees else "differs"
        print(
            f"seat cap, {cap.policy}: measured {cap.measured}, predicted {cap.predicted_text} "
            f"({verdict}); measured: {cap.measured_reason}"
        )
    if test.calibration is not None:
        print(test.calibration.description)
    env = test.environment
    if "load_average_start" in env:
        end = env.get("load_average_end")
        print(
            f"load average (1 min): {display.number(env['load_average_start'][0])} at the start, "
            + (f"{display.number(end[0])} at the end" if end else "not read at the end")
        )
    _report_server(test)
    for warning in test.warnings:
        note(f"warning: {warning}")


def _report_server(test: LoadTest) -> None:
    """What only a server's load test has: the per-request cost and the batch sizes the
    server's own statistics say it ran, run by run."""
    env = test.environment
    if "per_request_ms" not in env:
        return
    print(
        f"server {env.get('server')}, model {env.get('model')}: max batch "
        f"{env.get('max_batch_size')}, queue delay {env.get('max_queue_delay_us')} µs; "
        f"each request beyond the first costs {display.ms(env['per_request_ms'])}"
    )
    for run in env.get("runs") or []:
        ran = run["server"]
        sizes = ", ".join(f"{n}×{b}" for b, n in ran["batches"].items()) or "none"
        frames = run["frames"]
        what = f"{run['sessions']} session{'s' if run['sessions'] != 1 else ''}"
        print(
            f"{what}, seed {run['seed']}: {frames['delivered']} of "
            f"{frames['delivered'] + frames['failed'] + frames['timed out']} requests answered"
            + (
                f" ({frames['after the end']} after the end of the run, counted as queued then)"
                if frames.get("after the end")
                else ""
            )
            + f"; the server ran {ran['frames']} frames in {ran['executions']} executions "
            f"(batches {sizes})"
        )


def _check_report(args: argparse.Namespace) -> Any:
    """The criteria the report's seat caps are judged by; BadInput for a report file that
    cannot be written (checked before any run)."""
    path = args.report
    if path is None:
        return None
    if path.is_dir() or not path.parent.is_dir():
        raise BadInput(f"--report {path}: give a file in a folder that exists")
    return criteria_from_args(args)


def _write_report(args: argparse.Namespace, test: LoadTest) -> None:
    if args.report is None:
        return
    import shlex

    from planner.validate.accuracy import accuracy, markdown

    judged = accuracy(test, _check_report(args))
    text = markdown(judged, shlex.join(["planner", *getattr(args, "argv", ["loadtest"])]))
    try:
        args.report.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise BadInput(f"--report {args.report}: cannot write ({exc.strerror})") from None
    note(f"wrote the accuracy report to {args.report}")


def _write_out(path: Path | None, test: LoadTest) -> None:
    if path is None:
        return
    from planner.validate.worker.bundle import write_frames

    runs = [(i, r.records) for i, r in enumerate(test.runs) if r.records is not None]
    if not runs:
        note(f"no per-frame records to write to {path} (a summary import has none)")
        return
    try:
        with path.open("w", newline="", encoding="utf-8") as handle:
            write_frames(handle, runs, extra=True)
    except OSError as exc:
        raise BadInput(f"--out {path}: cannot write ({exc.strerror})") from None
    note(f"wrote {sum(r.frames for _, r in runs):,} frame records to {path}")


class Bar(StatusLine):
    """The load test's progress on standard error: a bar redrawn in place on a terminal,
    one line per run elsewhere."""

    message = ""

    def __call__(self, event: Progress) -> None:
        if not self.terminal:
            if event.message != self.message:
                self.message = event.message
                self.log(f"[{event.fraction:4.0%}] {event.message}")
        elif self.due(final=event.fraction >= 1):
            self.draw(f"{self.bar(event.fraction)}  {event.message}")
