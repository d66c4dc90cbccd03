"""The section "Against a Triton server" of docs/accuracy.md: a real Triton Inference Server
(through PyTriton, which bundles ``tritonserver``) serving the reference model on this
machine's CPU behind its dynamic batcher, load-tested with session traffic by
``planner loadtest --target`` and judged against the planner's prediction of a server that
queues every frame.

    python scripts/accuracy_triton.py [ACCURACY.md]     (about 5 minutes)
    python scripts/accuracy_triton.py --quick OUT.md    (a smoke run of the script)

Needs the ``measure`` extra and the Triton of ``constraints/triton.txt`` (scripts/test.sh
installs both). The load test goes into a store of its own (``ACCURACY_DB``, default a fresh
temporary file). The section replaces the one already in the file, or is appended.

The server: the reference model (planner/measure/refmodel.py) at 32x18 on one PyTorch
thread, ``max_batch_size`` 8, ``max_queue_delay_microseconds`` 2000, one model instance.
Run as ``python scripts/accuracy_triton.py --serve HTTP GRPC METRICS`` it is that server.
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

MODEL = "reference"
WIDTH, HEIGHT = 32, 18
MAX_BATCH = 8
QUEUE_DELAY_US = 2000
TITLE = "Against a Triton server"
LOADTEST = (
    "--sessions", "1-12", "--fps", "30", "--duration-s", "10", "--find-cap", "12",
    "--budget-ms", "50", "--min-fps", "28.5",
)  # fmt: skip
QUICK = ("--sessions", "1-3", "--fps", "30", "--duration-s", "3", "--find-cap", "3")
"""``--quick``: a smoke run of the script (seconds, not minutes), written to the file given."""
REPO = Path(__file__).resolve().parent.parent


def free_ports(count: int) -> list[int]:
    sockets = [socket.socket() for _ in range(count)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def serve(http: int, grpc: int, metrics: int) -> None:
    """Serve the reference model until interrupted (SIGINT stops tritonserver too)."""
    import numpy as np
    import pytriton.models.manager as manager
    import torch
    from pytriton.decorators import batch
    from pytriton.model_config import DynamicBatcher, ModelConfig, Tensor
    from pytriton.triton import Triton, TritonConfig, TritonSecurityConfig

    from planner.measure.refmodel import HEATMAPS, IN_CHANNELS, build_reference_model

    torch.set_num_threads(1)
    manager.CREATE_TRITON_CLIENT_TIMEOUT_S = 120.0
    model = build_reference_model().eval()

    @batch
    def infer(x: np.ndarray) -> dict[str, np.ndarray]:
        with torch.inference_mode():
            heat = model(torch.from_numpy(x))
        # The detector's answer: where each heatmap peaks (the arg-max), not the maps.
        peaks = heat.flatten(2).argmax(dim=2).to(torch.float32).numpy()
        return {"peaks": peaks}

    restricted = ["shared-memory", "model-repository", "trace", "logging"]
    config = TritonConfig(http_port=http, grpc_port=grpc, metrics_port=metrics)
    with Triton(
        config=config, security_config=TritonSecurityConfig(restricted_endpoints=restricted)
    ) as triton:
        triton.bind(
            model_name=MODEL,
            infer_func=infer,
            inputs=[Tensor(name="x", dtype=np.float32, shape=(IN_CHANNELS, HEIGHT, WIDTH))],
            outputs=[Tensor(name="peaks", dtype=np.float32, shape=(HEATMAPS,))],
            config=ModelConfig(
                max_batch_size=MAX_BATCH,
                batcher=DynamicBatcher(max_queue_delay_microseconds=QUEUE_DELAY_US),
            ),
        )
        triton.serve()


def _wait_ready(process: subprocess.Popen[bytes], grpc: int, log: Path) -> None:
    import tritonclient.grpc as client

    deadline = time.monotonic() + 180.0
    connection = client.InferenceServerClient(f"127.0.0.1:{grpc}")
    try:
        while time.monotonic() < deadline and process.poll() is None:
            try:
                if connection.is_model_ready(MODEL):
                    return
            except Exception:  # not listening yet
                pass
            time.sleep(0.5)
    finally:
        connection.close()
    raise SystemExit(f"the Triton server did not get ready:\n{log.read_text()[-2000:]}")


def section(report: str, command: str) -> str:
    """The load test's report as a section of docs/accuracy.md: its headings one level
    down, under ``TITLE``, with the commands that made it."""
    body = report.split("\n", 1)[1] if report.startswith("# ") else report
    body = re.sub(r"^(#+) ", lambda m: "#" + m.group(1) + " ", body, flags=re.M)
    intro = (
        f"## {TITLE}\n\n"
        "A real Triton Inference Server 2.51 (through PyTriton 0.7.0) serving the reference "
        f"model at {WIDTH}x{HEIGHT} on one PyTorch thread on this CPU, behind its dynamic "
        f"batcher (`max_batch_size` {MAX_BATCH}, `max_queue_delay_microseconds` "
        f"{QUEUE_DELAY_US}); every frame of every session is one request of batch 1, as "
        "session traffic reaches a real server. The planner predicts the same scenarios "
        "as a server that queues every frame (`queue = all`), with the triton policy on the "
        "server's settings, on the single-request curve it measured first plus the "
        "per-request cost it measured between its two sweeps, and with the curve's "
        "batch-time spread. Generated by `python scripts/accuracy_triton.py`, which ran:\n\n"
        f"```\n{command}\n```\n"
    )
    return intro + body.rstrip("\n") + "\n\n" + NOTES


NOTES = """### Reading these figures

- Frames answered after the end of a run count as still queued, on both sides: the
  simulator stops at the end of the run with its queue, the load test waits for every
  answer, and only those within the run are judged.
- The p50 is the figure most often outside its target here. Near saturation (5-6
  sessions on this server) the time a frame waits grows as 1 / (1 - utilisation), so a
  few per cent of error in what the server can do becomes tens of per cent in latency;
  past it, both sides grow linearly and agree better. A calibration of three numbers
  (a, c, d) moves the whole curve and cannot bend it around that knee.
- The curve is measured closed-loop (one request, or b at once, waited for), the runs are
  open-loop session traffic; on this 2-core CPU the server, the model's PyTorch thread
  and the client share the cores, so the server's own figures move from run to run (the
  per-request cost it measures, in particular, by up to about 1 ms). A rerun gives
  errors of the same size, not the same figures.
"""


def splice(path: Path, text: str) -> None:
    """Put the section into ``path`` in place of the one there (or at the end)."""
    old = path.read_text(encoding="utf-8") if path.exists() else "# Accuracy\n"
    pattern = re.compile(rf"^## {re.escape(TITLE)}\n.*?(?=^## (?!#)|\Z)", re.S | re.M)
    if pattern.search(old):
        new = pattern.sub(lambda _m: text.rstrip() + "\n\n", old, count=1)
    else:
        new = old.rstrip() + "\n\n" + text
    path.write_text(new.rstrip() + "\n", encoding="utf-8")


def main(out: Path, runs: tuple[str, ...] = LOADTEST) -> None:
    http, grpc, metrics = free_ports(3)
    env = dict(os.environ)
    libdir = sysconfig.get_config_var("LIBDIR") or ""
    env["LD_LIBRARY_PATH"] = os.pathsep.join(p for p in (libdir, env.get("LD_LIBRARY_PATH")) if p)
    workdir = Path(tempfile.mkdtemp(prefix="planner-triton-accuracy-"))
    log = workdir / "server.log"
    db = os.environ.get("ACCURACY_DB") or str(workdir / "accuracy.duckdb")
    report = workdir / "report.md"
    with log.open("wb") as handle:
        server = subprocess.Popen(
            [sys.executable, __file__, "--serve", str(http), str(grpc), str(metrics)],
            env=env, stdout=handle, stderr=subprocess.STDOUT,
        )  # fmt: skip
    try:
        _wait_ready(server, grpc, log)
        planner = [sys.executable, "-m", "planner"]
        argv = [*planner, "--db", db, "loadtest", "--target", f"grpc://127.0.0.1:{grpc}",
                "--model", MODEL, *runs, "--report", str(report)]  # fmt: skip
        subprocess.run(argv, check=True, cwd=REPO)
        shown = ["planner", "loadtest", "--target", "grpc://HOST:PORT", "--model", MODEL,
                 *runs, "--report", "FILE"]  # fmt: skip
        splice(out, section(report.read_text(encoding="utf-8"), shlex.join(shown)))
        print(f"wrote the section '{TITLE}' of {out} (load test stored in {db})")
    finally:
        server.send_signal(signal.SIGINT)
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()


if __name__ == "__main__":
    if sys.argv[1:2] == ["--serve"]:
        serve(*(int(a) for a in sys.argv[2:5]))
    else:
        quick = "--quick" in sys.argv[1:]
        given = [a for a in sys.argv[1:] if a != "--quick"]
        out = Path(given[0]) if given else REPO / "docs" / "accuracy.md"
        main(out, QUICK if quick else LOADTEST)
