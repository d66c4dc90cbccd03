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
from pathlib import Path
from typing import Any

from planner import display, limits
from planner.cli.loadtest_options import (
    CALIBRATION_HELP,
    DEFAULTS,
    IMPORT_SEEDS,
    SERVER_ONLY,
    add_import_queue_options,
    calibration_option,
    check_files,
    criteria_from_args,
    find_cap,
    import_scenario,
    options_from_args,
    server_options_from_args,
)
from planner.cli.output import Bar, note, number, open_store, print_json, table
from planner.errors import BadInput
from planner.validate import view
from planner.validate.options import shown_command
from planner.validate.runs import LoadTest
from planner.validate.server.client import CALL_TIMEOUT_S
from planner.views.choices import NO_STAGES, PHASES, POLICIES

INTERRUPTED = 130
ACTIONS = ("import", "list", "show")


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
    add_import_queue_options(parser)
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
    server.add_argument(
        "--call-timeout-s",
        help="longest wait for one answer of the server, in s: a request that takes longer "
        "times out, and a call the curve needs ends the load test "
        f"(default {CALL_TIMEOUT_S:g})",
    )
    server.add_argument(
        "--time-limit-s",
        help="longest time the whole load test may take, in s; the runs finished by then "
        "are kept (default: no limit beyond each call's)",
    )
    server.add_argument(
        "--header",
        action="append",
        metavar="NAME=VALUE",
        help="a header every call carries, such as an access token (repeatable); its value "
        "is never stored, printed or reported",
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
# Commands


def run(args: argparse.Namespace) -> int:
    if getattr(args, "server", None) is not None:
        if args.action is not None:
            raise BadInput(f"--target runs a load test; it does not go with {args.action}")
        return _run_server(args)
    if args.action in ACTIONS:
        return {"list": _list, "show": _show, "import": _import}[args.action](args)
    if args.target is not None:
        raise BadInput(f"unexpected {args.target!r}; did you mean `planner loadtest import FILE`?")
    refused = [f"--{n.replace('_', '-')}" for n in SERVER_ONLY if getattr(args, n) is not None]
    if refused:
        raise BadInput(f"{', '.join(refused)} go with --target (a server's load test)")
    return _run(args)


def _run(args: argparse.Namespace) -> int:
    from planner.measure.devices import require_torch, resolve_device
    from planner.validate.loadtest import run_loadtest

    options, criteria = options_from_args(args), criteria_from_args(args)
    upto = find_cap(args, options)
    if args.format != "auto":
        raise BadInput("--format is for import")
    check_files(args)
    with open_store(args) as store:
        store.require_writable()
        curve = store.curve(args.curve) if args.curve else None
        if args.calibration is not None and curve is None:
            raise BadInput("--calibration needs --curve (a calibration belongs to a stored curve)")
        applied = None if curve is None else calibration_option(store, args.calibration, curve.id)
    require_torch()
    resolve_device(options.measure.device)
    with Bar(sys.stderr) as bar:
        test = run_loadtest(options, curve=curve, calibration=applied, progress=bar,
                            criteria=criteria, find_cap_upto=upto)  # fmt: skip
    return _status(_keep(args, test, () if curve else (test.curve,), f"curve {test.curve.id}"))


def _run_server(args: argparse.Namespace) -> int:
    from planner.validate.server.client import ServerFailed
    from planner.validate.server.loadtest import run_server_loadtest

    options, server = server_options_from_args(args)
    criteria = criteria_from_args(args)
    upto = find_cap(args, options)
    check_files(args)
    with open_store(args) as store:
        store.require_writable()
    with Bar(sys.stderr) as bar:
        done = run_server_loadtest(options, server, progress=bar, criteria=criteria,
                                   find_cap_upto=upto)  # fmt: skip
    single, concurrent = done.curves
    what = (
        f"{done.test.source}; curves {single.id}, one request of b frames, and "
        f"{concurrent.id}, b requests of one frame"
    )
    stored = _keep(args, done.test, done.curves, what)
    if stored is not None and done.stopped is not None:
        kept = "the 1 run" if len(stored.runs) == 1 else f"the {len(stored.runs)} runs"
        are = "is" if len(stored.runs) == 1 else "are"
        raise ServerFailed(
            f"{done.stopped}; {kept} finished before it {are} kept, marked interrupted, in "
            f"load test {stored.id}"
        )
    return _status(stored)


def _keep(args: argparse.Namespace, test: LoadTest, curves: Any, what: str) -> LoadTest | None:
    """Store a finished (or interrupted) load test and the curves it measured, and report
    it: the test as stored (None: no run finished, nothing stored)."""
    from planner.validate.loadtest_store import save_loadtest

    if not test.runs:
        return None
    if hasattr(args, "argv"):  # what the accuracy report cites, however it is re-made
        test.environment["command"] = shown_command(args.argv)
    with open_store(args) as store:
        store.add_curves(list(curves))
        test = save_loadtest(store, test)
    _stored(args, test, f"stored load test {test.id} ({what})")
    return test


def _status(stored: LoadTest | None) -> int:
    """0, or 130 for a load test Ctrl-C ended (saying what was kept)."""
    if stored is None:
        note("interrupted before any run finished; nothing stored")
        return INTERRUPTED
    if stored.interrupted:
        note("interrupted: the runs finished before Ctrl-C were kept")
        return INTERRUPTED
    return 0


def _import(args: argparse.Namespace) -> int:
    from planner.validate.loadtest_import import import_file
    from planner.validate.loadtest_store import save_loadtest

    if args.target is None:
        raise BadInput("give the file to import: planner loadtest import FILE")
    flags = ("camera", "find_cap", "policies", "threads", "model_file", "batches", *SERVER_ONLY)
    refused = [f"--{f.replace('_', '-')} does not apply to import" for f in flags
               if getattr(args, f) is not None]  # fmt: skip
    if refused:
        raise BadInput(refused)
    check_files(args)
    with open_store(args) as store:
        store.require_writable()
        curve = None
        if args.curve:
            curve = store.curve(args.curve)
        elif args.points:
            from planner.curves.curve import make_curve, parse_points_option

            points = parse_points_option(args.points)
            card = args.card or "unnamed card"
            curve = make_curve(model="unnamed model", card=card, points=points, source="uploaded")
        seeds = int(number(args.seeds or str(IMPORT_SEEDS), "--seeds", limits.SEEDS))
        scenario = None if curve is None else import_scenario(args, curve, store)
        test = import_file(Path(args.target), scenario, curve, seeds, args.format)
        store.add_curves([test.curve])
        test = save_loadtest(store, test)
    _stored(args, test, f"stored load test {test.id} ({test.source}, curve {test.curve.id})")
    return 0


def _list(args: argparse.Namespace) -> int:
    from planner.validate.loadtest_store import loadtests

    with open_store(args) as store:
        rows = loadtests(store)
    if args.json:
        print_json([{**r, "created_at": str(r["created_at"])} for r in rows])
    elif not rows:
        print("no load tests stored yet: run `planner loadtest` or `planner loadtest import FILE`")
    else:
        header = ("id", "when (UTC)", "source", "curve", "runs", "interrupted", "description")
        print(table([(r["id"], str(r["created_at"]), r["source"], r["curve_id"], r["runs"],
                      "yes" if r["interrupted"] else "", r["description"]) for r in rows],
                    header))  # fmt: skip
    return 0


def _show(args: argparse.Namespace) -> int:
    from planner.validate.loadtest_store import load_loadtest

    if args.target is None:
        raise BadInput("give the id of a stored load test: planner loadtest show ID")
    ident = int(number(args.target, "load test id", limits.Bound(1, 2**31 - 1, whole=True)))
    check_files(args)
    with open_store(args) as store:
        wanted = args.out is not None or args.report is not None
        test = load_loadtest(store, ident, records=wanted)
    _write_files(args, test)
    _report(args, test)
    return 0


# ---------------------------------------------------------------------------------------
# Output


def _write_files(args: argparse.Namespace, test: LoadTest) -> None:
    from planner.validate import files

    if args.out is not None:
        note(files.write_frames_csv(args.out, test))
    if args.report is not None:
        command = shown_command(getattr(args, "argv", ["loadtest"]))
        note(files.write_report(args.report, test, check_files(args), command))


def _stored(args: argparse.Namespace, test: LoadTest, message: str) -> None:
    """Say what was stored, write the files asked for, and print the comparison."""
    note(message)
    if test.calibration is not None:
        note(f"stored calibration {test.calibration.id}: {test.calibration.description}")
    _write_files(args, test)
    _report(args, test)


def _report(args: argparse.Namespace, test: LoadTest) -> None:
    if args.json:
        print_json(view.summary(test))
        return
    print("\n".join(view.head(test)))
    for title, rows in view.tables(test):
        print(title)
        print(table(rows, view.HEADER))
    for line in view.tail(test):
        print(line)
    for warning in test.warnings:
        note(f"warning: {warning}")
