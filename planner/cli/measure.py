"""``planner measure``: measure a batch curve on this machine's GPU (or CPU) and keep it."""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

from planner import display
from planner.cli.output import StatusLine, note, open_store, print_json, table
from planner.curves.curve import Curve
from planner.curves.imports.native import to_csv
from planner.errors import BadInput
from planner.measure.devices import resolve_device
from planner.measure.harness import (
    DEFAULT_BATCHES,
    DEFAULT_REPETITIONS,
    DEFAULT_RESOLUTION,
    DEFAULT_ROUNDS,
    DEFAULT_WARMUP,
    DRIFT_LIMIT,
    MeasureOptions,
    MeasureProgress,
    MeasureResult,
    ModelSpec,
    measure_curves,
    parse_batches,
    parse_input_shape,
    parse_precisions,
)

INTERRUPTED = 130  # the shell's status for a process ended by Ctrl-C (128 + SIGINT)

_PARAGRAPHS = (
    "Measure a batch curve (latency of one batched call against batch size) on this "
    "machine, the way the planner's reference curves were measured. Per batch size: "
    f"{DEFAULT_WARMUP} warm-up calls, then {DEFAULT_ROUNDS} rounds x {DEFAULT_REPETITIONS} "
    "timed calls, the device synchronised around each call; the latency is the median of "
    "the round medians, with p10/p50/p90 over all calls. cuDNN autotuning and inference "
    "mode are on. At the end the first batch size is measured again, and a change of more "
    f"than {DRIFT_LIMIT:.0%} is reported.",
    "Without --model-file the built-in reference model is measured: an HRNet-style network "
    "with squeeze-and-excitation attention, 9 input channels (a window of 3 frames), about "
    "1.5 M parameters, full resolution to its output heatmaps, random weights (latency does "
    "not depend on them). It has the shape of the study's ball detector, not its weights.",
    "WARNING: --model-file loads a TorchScript or torch.export file, and loading a model "
    "file runs code from it. Measure only files you trust.",
    "Running out of memory at a large batch ends that precision's sweep and keeps the "
    "points measured so far. Ctrl-C keeps them too (and writes/stores them if asked), then "
    "exits 130. Needs PyTorch, then the measure extra: pip install -e '.[measure]' in the "
    "planner's checkout.",
)
DESCRIPTION = "\n\n".join(textwrap.fill(p, 88) for p in _PARAGRAPHS)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "measure",
        help="measure a batch curve on this machine's GPU or CPU",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    model = parser.add_argument_group("model")
    model.add_argument(
        "--model-file",
        type=Path,
        metavar="FILE",
        help="a TorchScript file (torch.jit.save) or a torch.export archive (.pt2) to "
        "measure instead of the reference model; needs --input-shape. Loading it runs "
        "code from the file: only use files you trust",
    )
    model.add_argument(
        "--input-shape",
        metavar="C,H,W",
        help="shape of one input of --model-file without the batch axis, e.g. 9,288,512; "
        "the curve's resolution is W x H. An export archive must have been exported with "
        "a dynamic batch dimension",
    )
    model.add_argument(
        "--model",
        metavar="NAME",
        help="model name to store the curve under (default: ball-detector for the "
        "reference model, the file's name without extension for --model-file)",
    )
    model.add_argument(
        "--resolution",
        metavar="WxH",
        help=f"input width x height of the reference model (default {DEFAULT_RESOLUTION}); "
        "with --model-file it must agree with --input-shape",
    )

    method = parser.add_argument_group("method")
    method.add_argument(
        "--batches",
        default=",".join(map(str, DEFAULT_BATCHES)),
        metavar="LIST",
        help="batch sizes to measure, comma-separated, measured in ascending order "
        "(default %(default)s)",
    )
    method.add_argument(
        "--precision",
        metavar="LIST",
        help="fp32, fp16 or bf16; several comma-separated give one curve each "
        "(default: fp16 on a GPU, fp32 on the CPU). Model and input are converted to it",
    )
    method.add_argument(
        "--device",
        metavar="DEVICE",
        help="cuda, cpu or mps (Apple's Metal) (default: CUDA if present, else Metal, else CPU)",
    )
    method.add_argument(
        "--warmup",
        default=str(DEFAULT_WARMUP),
        metavar="N",
        help="untimed calls before each batch size's timing (default %(default)s)",
    )
    method.add_argument(
        "--rounds",
        default=str(DEFAULT_ROUNDS),
        metavar="R",
        help="rounds of timed calls per batch size (default %(default)s)",
    )
    method.add_argument(
        "--repetitions",
        default=str(DEFAULT_REPETITIONS),
        metavar="K",
        help="timed calls per round (default %(default)s)",
    )
    method.add_argument(
        "--channels-last",
        action="store_true",
        help="use the channels-last memory layout for model and input (often faster with "
        "FP16 on tensor-core GPUs)",
    )

    where = parser.add_argument_group("card")
    where.add_argument(
        "--card",
        metavar="NAME",
        help="card name to store the curve under (default: the catalogue's name when the "
        "GPU is a catalogue card, e.g. h200-141gb; else a slug of the device name, e.g. "
        "nvidia-geforce-rtx-4090, or cpu-<model> on the CPU)",
    )
    where.add_argument(
        "--mig-profile",
        metavar="PROFILE",
        help="MIG profile the measurement runs on, e.g. 3g.40gb (default: read from the "
        "device name when it states one)",
    )

    cluster = parser.add_argument_group("cluster")
    cluster.add_argument(
        "--cluster",
        choices=("ray",),
        help="measure once on every accelerator type of a Ray cluster (one GPU task per "
        "type, on a node of that type) and bring the curves back here; needs the "
        "`cluster` extra here and the planner with PyTorch on the nodes",
    )
    cluster.add_argument(
        "--accelerators",
        metavar="LIST",
        help="only these accelerator types, comma-separated, e.g. A100,L4 (default: every "
        "type the cluster declares)",
    )
    cluster.add_argument(
        "--ray-address",
        metavar="ADDRESS",
        help="the cluster to use (default: the running one, as `ray.init(address='auto')`)",
    )

    output = parser.add_argument_group("output")
    output.add_argument(
        "--out",
        type=Path,
        metavar="FILE",
        help="write the curve(s) to FILE: the planner's upload CSV format, or JSON with "
        "all metadata if FILE ends in .json; both import with `planner curves import`",
    )
    output.add_argument(
        "--store", action="store_true", help="store the curve(s) in the planner's database"
    )
    output.add_argument(
        "--json",
        action="store_true",
        help="print the curve(s) as JSON (a list, as `planner curves import --json` prints)",
    )
    parser.set_defaults(handler=measure)


def measure(args: argparse.Namespace) -> int:
    options = options_from_args(args)
    if args.cluster is None and (args.accelerators or args.ray_address):
        raise BadInput("--accelerators and --ray-address need --cluster ray")
    if args.cluster is None:
        resolve_device(options.device)  # an unusable --device is bad input: say so first
    if args.out is not None and args.out.is_dir():
        raise BadInput(f"--out {args.out} is a folder; give a file name ending in .csv or .json")
    if args.out is not None and not args.out.parent.is_dir():
        raise BadInput(f"--out {args.out}: the folder {args.out.parent} does not exist")
    if args.store:
        # Find out now, not after minutes of measuring, if the store cannot be used (a
        # damaged file, one the user may only read, another process holding it too long).
        with open_store(args) as store:
            store.require_writable()
    if args.cluster == "ray":
        from planner.measure.cluster import measure_on_cluster

        kinds = [k.strip() for k in (args.accelerators or "").split(",") if k.strip()]
        result = measure_on_cluster(
            options, address=args.ray_address, accelerators=kinds or None, report=note
        )
        return finish(args, result)
    bar = ProgressBar(sys.stderr)
    try:
        result = measure_curves(options, bar)
    finally:
        bar.close()
    return finish(args, result)


def options_from_args(args: argparse.Namespace) -> MeasureOptions:
    """The command's options as a validated ``MeasureOptions``; every problem at once."""
    problems: list[str] = []
    parsed: dict[str, Any] = {}

    def attempt(name: str, parse: Callable[[str], object], text: str | None) -> None:
        if text is None:
            return
        try:
            parsed[name] = parse(text)
        except BadInput as exc:
            problems.extend(exc.problems)

    attempt("batches", parse_batches, args.batches)
    attempt("precisions", parse_precisions, args.precision)
    attempt("input_shape", parse_input_shape, args.input_shape)
    for name in ("warmup", "rounds", "repetitions"):
        attempt(name, lambda text, n=name: _whole(text, n), getattr(args, name))  # type: ignore[misc]
    if args.model_file is not None and not args.model_file.is_file():
        problems.append(f"model file {args.model_file} does not exist")
    if args.input_shape and args.model_file is None:
        problems.append(
            "--input-shape describes a --model-file; the reference model takes --resolution"
        )
    if problems:
        raise BadInput(problems)
    shape = parsed.pop("input_shape", None)
    return MeasureOptions(
        model=ModelSpec(path=args.model_file, input_shape=shape),
        resolution=args.resolution,
        device=args.device,
        channels_last=args.channels_last,
        model_name=args.model,
        card=args.card,
        mig_profile=args.mig_profile,
        **parsed,
    )


def _whole(text: str, name: str) -> int:
    try:
        return int(str(text).strip())
    except ValueError:
        raise BadInput(f"--{name} {text!r} is not a whole number") from None


def finish(args: argparse.Namespace, result: MeasureResult) -> int:
    """Report warnings, write and store what was measured, print it; the exit status."""
    for warning in result.warnings:
        note(f"warning: {warning}")
    curves = list(result.curves)
    if not curves:
        note("interrupted before any point was measured; nothing written or stored")
        return INTERRUPTED
    if args.out is not None:
        text = (
            json.dumps([c.as_dict() for c in curves], indent=2) + "\n"
            if args.out.suffix.lower() == ".json"
            else to_csv(curves)
        )
        try:
            args.out.write_text(text, encoding="utf-8")
        except OSError as exc:
            raise BadInput(f"--out {args.out}: cannot write ({exc.strerror})") from None
        note(f"wrote {args.out}")
    if args.store:
        with open_store(args) as store:
            curves = store.add_curves(curves)
        for curve in curves:
            note(f"stored {curve.id}  {curve.label}")
    if args.json:
        print_json([c.as_dict() for c in curves])
    else:
        for curve in curves:
            print_curve(curve)
    if result.interrupted:
        note("interrupted: the points measured before Ctrl-C were kept")
        return INTERRUPTED
    return 0


def print_curve(curve: Curve) -> None:
    """The measured points, with time per frame so one can see whether batching pays."""
    print(f"{curve.id}  {curve.label}  [{curve.source}]")
    rows = [
        (
            p.batch,
            display.ms(p.latency_ms, unit=False),
            display.ms(p.p10_ms, unit=False),
            display.ms(p.p90_ms, unit=False),
            display.ms(p.latency_ms / p.batch, unit=False),
            "-" if p.memory_mb is None else f"{p.memory_mb:g}",
        )
        for p in curve.points
    ]
    print(table(rows, ("batch", "latency_ms", "p10_ms", "p90_ms", "ms_per_frame", "memory_mb")))
    if "drift_check" in curve.environment:
        print(f"drift check: {curve.environment['drift_check']}")
    if all(p.memory_mb is None for p in curve.points) and "memory_basis" in curve.environment:
        print(f"memory: {curve.environment['memory_basis']}")
    print()


class ProgressBar(StatusLine):
    """The sweep's progress on standard error.

    On a terminal: a bar redrawn in place (at most ten times a second) and one permanent
    line per measured point. Elsewhere (a log file, CI): only the line per point.
    """

    def __call__(self, event: MeasureProgress) -> None:
        if event.point is not None:
            self.log(event.message)
        elif self.terminal and self.due(final=event.fraction >= 1):
            self.draw(f"{self.bar(event.fraction)}  {event.precision} batch {event.batch}: "
                      f"{event.stage}")  # fmt: skip
