"""A real Triton Inference Server for the server load tests, through PyTriton.

Run as a script (``python tests/triton_server.py HTTP GRPC METRICS [SETTINGS]``), it
serves ``sleeper``: a model whose execution of a batch of b frames sleeps ``2 + 0.5 b``
ms (``batch_ms``), behind Triton's dynamic batcher (``max_batch_size`` 8,
``max_queue_delay_microseconds`` 2000), on the given ports, with the model statistics
open (PyTriton restricts them by default), until it is stopped. ``Settings`` change the
batcher, the model's speed, and whether the statistics are restricted to callers that
carry an access token, as a production server's are. ``serve`` starts it in a
subprocess and waits until the model is ready.

A subprocess of its own, because Triton's Python backend stub must load the running
interpreter's ``libpython`` (``LD_LIBRARY_PATH``, see ECOSYSTEM.md) and that variable
must be in the environment of the process that starts Triton; and stopping it cannot
leave PyTriton's threads in the test process.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import sysconfig
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import astuple, dataclass
from pathlib import Path

MODEL = "sleeper"
MAX_BATCH = 8
QUEUE_DELAY_US = 2000
SHAPE = (3, 16, 16)
START_TIMEOUT_S = 120.0
"""Start to ready is about 5–15 s here; a busy 2-core machine can take much longer."""


TOKEN_HEADER = "triton-access-token"
"""The header a restricted endpoint asks for over HTTP; over gRPC Triton expects it with
the prefix ``GRPC_PREFIX``."""
GRPC_PREFIX = "triton-grpc-protocol-"


@dataclass(frozen=True)
class Settings:
    """The server's batcher (``max_batch_size``, ``max_queue_delay_microseconds``), the
    model's speed (a batch of b frames sleeps ``base_ms + per_frame_ms * b``) and the
    access token its statistics are restricted to ("": open)."""

    max_batch: int = MAX_BATCH
    queue_delay_us: int = QUEUE_DELAY_US
    base_ms: float = 2.0
    per_frame_ms: float = 0.5
    token: str = ""

    def args(self) -> list[str]:
        return [str(v) for v in astuple(self)]

    @classmethod
    def of(cls, args: list[str]) -> Settings:
        if not args:
            return cls()
        batch, delay, base, per_frame, *token = args
        return cls(int(batch), int(delay), float(base), float(per_frame), "".join(token))


def batch_ms(frames: int, settings: Settings = Settings()) -> float:
    """What the model's execution of ``frames`` frames sleeps (ms)."""
    return settings.base_ms + settings.per_frame_ms * frames


def free_ports(count: int) -> list[int]:
    """Ports nothing listens on now (the OS's choice)."""
    sockets = [socket.socket() for _ in range(count)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


@contextmanager
def serve(settings: Settings = Settings()) -> Iterator[tuple[int, int]]:
    """Start the server (with ``settings``) in a subprocess; yields its (HTTP, gRPC) ports
    once the model is ready, and stops it afterwards. RuntimeError, with the server's
    last output, when it does not become ready."""
    http, grpc, metrics = free_ports(3)
    env = dict(os.environ)
    libdir = sysconfig.get_config_var("LIBDIR") or ""
    env["LD_LIBRARY_PATH"] = os.pathsep.join(p for p in (libdir, env.get("LD_LIBRARY_PATH")) if p)
    log = Path(os.environ.get("TMPDIR", "/tmp")) / f"planner-triton-{os.getpid()}-{grpc}.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [
                sys.executable,
                str(Path(__file__).resolve()),
                str(http),
                str(grpc),
                str(metrics),
                *settings.args(),
            ],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        _wait_ready(process, grpc, log)
        yield http, grpc
    finally:
        # SIGINT: PyTriton stops the tritonserver it started (SIGTERM would orphan it).
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _wait_ready(process: subprocess.Popen[bytes], grpc: int, log: Path) -> None:
    import tritonclient.grpc as client

    deadline = time.monotonic() + START_TIMEOUT_S
    connection = client.InferenceServerClient(f"127.0.0.1:{grpc}")
    try:
        while time.monotonic() < deadline:
            if process.poll() is not None:
                break
            try:
                if connection.is_model_ready(MODEL):
                    return
            except Exception:  # not listening yet
                pass
            time.sleep(0.5)
    finally:
        connection.close()
    tail = log.read_text(errors="replace")[-2000:]
    raise RuntimeError(f"the Triton server did not get ready:\n{tail}")


def main(http: int, grpc: int, metrics: int, settings: Settings = Settings()) -> None:
    import numpy as np
    import pytriton.models.manager as manager
    from pytriton.decorators import batch
    from pytriton.model_config import DynamicBatcher, ModelConfig, Tensor
    from pytriton.triton import Triton, TritonConfig, TritonSecurityConfig

    # Loading the model's stub can outlast PyTriton's 10 s on a busy machine.
    manager.CREATE_TRITON_CLIENT_TIMEOUT_S = START_TIMEOUT_S

    @batch
    def infer(x: np.ndarray) -> dict[str, np.ndarray]:
        time.sleep(batch_ms(x.shape[0], settings) / 1000.0)
        return {"y": np.zeros((x.shape[0], 1), np.float32)}

    restricted = ["shared-memory", "model-repository", "trace", "logging"]
    if settings.token:
        restricted.append("statistics")
    security = TritonSecurityConfig(
        access_token=settings.token or None, restricted_endpoints=restricted
    )
    config = TritonConfig(http_port=http, grpc_port=grpc, metrics_port=metrics)
    with Triton(config=config, security_config=security) as triton:
        triton.bind(
            model_name=MODEL,
            infer_func=infer,
            inputs=[Tensor(name="x", dtype=np.float32, shape=SHAPE)],
            outputs=[Tensor(name="y", dtype=np.float32, shape=(1,))],
            config=ModelConfig(
                max_batch_size=settings.max_batch,
                batcher=DynamicBatcher(max_queue_delay_microseconds=settings.queue_delay_us),
            ),
        )
        triton.serve()


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:4]), Settings.of(sys.argv[4:]))
