#!/usr/bin/env python3
"""The accuracy report's load test on a CUDA machine that has PyTorch and NumPy only.

Run it from the repository root on the machine with the GPU (no install, no network):

    python scripts/accuracy_gpu.py --out accuracy-gpu

It picks the reference model's input so that batches of 1 to 8 take a few to a few tens
of milliseconds on this card, measures the batch curve, chooses the source frame rate
so that the card goes from ample to saturated between 1 and 8 sessions (batch 5 takes
one frame interval), then serves 1..8 sessions under batch-all, oldest-first,
round-robin and triton on the reference worker, with real CPU work (a 1280x720 camera
frame resized and normalised before the model, the heatmap's arg-max after it) on
--cpu-workers threads. It writes a bundle (``loadtest.json`` and ``frames.csv``) and the
command that turns it into the report, for the machine where the planner is installed:

    planner loadtest import accuracy-gpu/bundle --report docs/accuracy-gpu.md \\
        --budget-ms B --min-fps F

It stops starting runs after --seconds (default 300) so that it ends within about six
minutes, and keeps what finished. It imports only the planner's worker, its policies
and the measurement harness, which need PyTorch, NumPy and the standard library.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shlex
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from planner.measure.devices import host as machine
from planner.measure.harness import load_model, measure_curves
from planner.measure.options import MeasureOptions
from planner.sim.scenario import Scenario
from planner.sim.stages import WorkerStages
from planner.validate.worker.backends import TorchBackend
from planner.validate.worker.bundle import scheduler_table, write_bundle
from planner.validate.worker.checks import problems as record_problems
from planner.validate.worker.serve import serve

POLICIES = ("batch-all", "oldest-first", "round-robin", "triton")
RESOLUTIONS = ("512x288", "1024x576", "1536x864", "2048x1152", "3072x1728")
SATURATES_AT = 5
"""The session count whose batch takes one frame interval: fewer sessions are served in
full, more saturate the card."""


def now() -> str:
    return datetime.now(UTC).replace(microsecond=0).isoformat()


def measure(resolution: str, device: str, precision: str, batches: tuple[int, ...],
            quick: bool) -> tuple[dict[int, float], Any]:  # fmt: skip
    """Batch size -> latency (ms) of the reference model at ``resolution``, and the
    measured curve."""
    options = MeasureOptions(
        resolution=resolution,
        device=device,
        precisions=(precision,),
        batches=batches,
        warmup=5 if quick else 10,
        rounds=1 if quick else 3,
        repetitions=10 if quick else 30,
    )
    result = measure_curves(options)
    for warning in result.warnings:
        print(f"  warning: {warning}", file=sys.stderr)
    if not result.curves:
        raise SystemExit(f"no curve measured at {resolution}: {'; '.join(result.warnings)}")
    curve = result.curves[0]
    return {p.batch: p.latency_ms for p in curve.points}, curve


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("accuracy-gpu"))
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--precision", default="fp16")
    parser.add_argument("--resolution", help="the model's input (default: chosen, see above)")
    parser.add_argument("--fps", type=float, help="source rate (default: chosen, see above)")
    parser.add_argument("--sessions", type=int, default=8)
    parser.add_argument("--duration-s", type=float, default=6.0)
    parser.add_argument("--camera", default="1280x720")
    parser.add_argument("--cpu-workers", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=300.0,
                        help="start no run after this many seconds (default 300)")  # fmt: skip
    args = parser.parse_args()
    started = time.monotonic()
    import torch

    if args.device.startswith("cuda") and not torch.cuda.is_available():
        raise SystemExit("no CUDA device here; give --device cpu to try the script anyway")
    environment = {
        "machine": machine(),
        "started_at": now(),
        "load_average_start": list(os.getloadavg()),
        "torch": torch.__version__,
        "torch_threads": torch.get_num_threads(),
        "command": shlex.join(["python", "scripts/accuracy_gpu.py", *sys.argv[1:]]),
    }
    if args.device.startswith("cuda"):
        environment["device"] = torch.cuda.get_device_name(0)
    print(f"device: {environment.get('device', args.device)}, PyTorch {torch.__version__}")

    # 1. The input: the first resolution whose batch 8 takes at least 8 ms.
    resolution = args.resolution
    if resolution is None:
        for resolution in RESOLUTIONS:
            probe, _ = measure(resolution, args.device, args.precision, (1, 8), quick=True)
            print(f"probe {resolution}: batch 1 {probe[1]:.2f} ms, batch 8 {probe[8]:.2f} ms")
            if probe[8] >= 8.0:
                break
    # 2. The curve, every batch size a run can form.
    batches = tuple(range(1, args.sessions + 1))
    latency, curve = measure(resolution, args.device, args.precision, batches, quick=False)
    print("curve: " + ", ".join(f"{b}: {ms:.2f} ms" for b, ms in latency.items()))
    fps = args.fps or round(1000.0 / latency[min(SATURATES_AT, args.sessions)], 1)
    interval = 1000.0 / fps
    table = scheduler_table(list(latency), list(latency.values()), 64)

    # 3. The worker, warmed up, and the cost of its CPU work.
    width, height = (int(v) for v in args.camera.lower().split("x"))
    options = MeasureOptions(resolution=resolution, device=args.device,
                             precisions=(args.precision,))  # fmt: skip
    backend = TorchBackend(
        load_model(options.model, args.device),
        args.device,
        args.precision,
        options.input_shape,
        args.sessions,
        camera=(width, height),
    )
    backend.warm_up(args.sessions)
    pre_ms, post_ms = backend.stage_costs()
    print(f"fps {fps:g}; CPU work: pre {pre_ms:.3f} ms, post {post_ms:.3f} ms")

    # 4. The runs.
    runs = []
    for sessions in batches:
        for policy in POLICIES:
            if time.monotonic() - started > args.seconds:
                print(f"out of time: stopping before {sessions} sessions, {policy}")
                break
            scenario = Scenario(
                latency_ms=tuple(table), sessions=sessions, policy=policy, fps=(fps,),
                duration_s=args.duration_s, seed=0,
                stages=WorkerStages(pre_ms=pre_ms, post_ms=post_ms, cpu_workers=args.cpu_workers),
            )  # fmt: skip
            run = serve(scenario, backend)
            problems = record_problems(run)
            if problems:
                raise SystemExit(f"{sessions} sessions, {policy}: {'; '.join(problems)}")
            runs.append(run)
            fps_now = run.results().min_fps
            print(f"{sessions} sessions, {policy}: slowest {fps_now:.1f} fps")
    environment["load_average_end"] = list(os.getloadavg())
    environment["finished_at"] = now()

    # 5. The bundle and the command that reports on it.
    loadtest_options = {
        "sessions": list(batches), "policies": list(POLICIES), "fps": fps,
        "duration_s": args.duration_s, "phases": "random", "seed": 0, "seeds": 1,
        "jitter_ms": 0.0, "network_ms": 0.0, "overhead_ms": 0.0, "max_batch": None,
        "max_queue_delay_us": None, "slo_ms": None, "camera": args.camera,
        "cpu_workers": args.cpu_workers, "threads": None, "device": args.device,
        "precision": args.precision, "resolution": resolution, "model_file": None,
        "input_shape": None,
    }  # fmt: skip
    folder = args.out / "bundle"
    write_bundle(folder, curve=curve.as_dict(), options=loadtest_options, runs=runs,
                 pre_ms=pre_ms, post_ms=post_ms, environment=environment)  # fmt: skip
    budget = math.ceil(2 * interval + pre_ms + post_ms)
    command = ["planner", "loadtest", "import", str(folder), "--report",
               "docs/accuracy-gpu.md", "--budget-ms", str(budget), "--min-fps",
               f"{0.95 * fps:.1f}"]  # fmt: skip
    (args.out / "import-command.txt").write_text(shlex.join(command) + "\n", "utf-8")
    (args.out / "summary.json").write_text(
        json.dumps({"resolution": resolution, "fps": fps, "latency_ms": latency,
                    "pre_ms": pre_ms, "post_ms": post_ms, "runs": len(runs),
                    "seconds": time.monotonic() - started, "environment": environment},
                   indent=2) + "\n", "utf-8")  # fmt: skip
    print(f"wrote {folder} ({len(runs)} runs) in {time.monotonic() - started:.0f} s; then:")
    print(shlex.join(command))
    return 0


if __name__ == "__main__":
    sys.exit(main())
