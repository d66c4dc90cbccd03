"""A hostile KServe v2 server for the load-test tests: the routes ``tritonclient`` uses,
over HTTP (``http.server``) and gRPC (``grpcio`` with tritonclient's servicer), on
127.0.0.1, answering as its ``Behaviour`` says: well (a model ``m`` of batch 8 whose
answers have the shape its metadata declares, and true statistics), or with whatever a
broken or malicious server does: hang, answer late, fail with HTTP 500 or a gRPC status,
close the connection, send garbage or 64 MiB of it, describe its model in a way that
cannot be read, count what cannot be true, withhold its statistics, die part-way, or
want an access token.

``serve(behaviour)`` starts both servers in threads of the test process and yields their
ports; ``Behaviour`` can be changed while they run. Nothing here sleeps to pace a test:
a hanging call waits until the server stops.
"""

from __future__ import annotations

import json
import random
import socket
import threading
from collections.abc import Iterator
from concurrent import futures
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODEL = "m"
METADATA: dict[str, Any] = {
    "name": MODEL,
    "platform": "hostile",
    "inputs": [{"name": "x", "datatype": "FP32", "shape": [-1, 3, 4, 4]}],
    "outputs": [{"name": "y", "datatype": "FP32", "shape": [-1, 2]}],
}
CONFIG: dict[str, Any] = {
    "name": MODEL,
    "max_batch_size": 8,
    "dynamic_batching": {"max_queue_delay_microseconds": 100},
}
INFER_NS = 100_000
"""What the statistics say each execution took (0.1 ms)."""


@dataclass
class Behaviour:
    """How the server answers. ``infer``: ``ok``, ``hang``, ``slow`` (after ``slow_s``),
    ``error`` (HTTP 500, gRPC INTERNAL), ``missing`` (HTTP 400 "unknown model", gRPC
    NOT_FOUND), ``close`` (the connection closed unanswered), ``garbage`` (bytes that are
    not UTF-8), ``huge`` (64 MiB that is not JSON), ``shape`` (an output of another
    shape); after ``infer_after`` good answers. ``stats``: ``ok``, ``hang``, ``refused``,
    ``falling`` (counters that go down), ``random``, ``no_size`` (batch statistics without
    their size). ``die_after_stats``: the server dies (every call unanswered, gRPC
    UNAVAILABLE) after that many readings of its statistics; ``die_after_infers`` the
    same after that many inferences. ``metadata``/``config``: what it says of the model.
    ``token``: the ``authorization`` header every call must carry."""

    infer: str = "ok"
    infer_after: int = 0
    slow_s: float = 0.0
    stats: str = "ok"
    die_after_stats: int | None = None
    die_after_infers: int | None = None
    metadata: Any = field(default_factory=lambda: json.loads(json.dumps(METADATA)))
    config: Any = field(default_factory=lambda: json.loads(json.dumps(CONFIG)))
    token: str | None = None
    # What the server counted (frames, executions, per batch size).
    frames: int = 0
    executions: int = 0
    batches: dict[int, int] = field(default_factory=dict)
    infers: int = 0
    readings: int = 0
    dead: bool = False
    seen: list[dict[str, str]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    stop: threading.Event = field(default_factory=threading.Event)

    def allowed(self, headers: dict[str, str]) -> bool:
        self.seen.append(headers)
        return self.token is None or headers.get("authorization") == self.token

    def on_infer(self, frames: int) -> str:
        """What to do with an inference of ``frames`` frames (counting a good one)."""
        with self.lock:
            if self.dead:
                return "dead"
            self.infers += 1
            if self.die_after_infers is not None and self.infers > self.die_after_infers:
                self.dead = True
                return "dead"
            mode = self.infer if self.infers > self.infer_after else "ok"
            if mode in ("ok", "slow"):
                self.frames += frames
                self.executions += 1
                self.batches[frames] = self.batches.get(frames, 0) + 1
            return mode

    def on_stats(self) -> str:
        with self.lock:
            if self.dead:
                return "dead"
            self.readings += 1
            if self.die_after_stats is not None and self.readings > self.die_after_stats:
                self.dead = True
                return "dead"
            return self.stats

    def statistics(self) -> dict[str, Any]:
        """The statistics document (HTTP's JSON; gRPC builds its message from it)."""
        frames, executions, batches = self.frames, self.executions, dict(self.batches)
        queue_ns = 0
        if self.stats == "falling":
            frames, executions = 10**6 - 1000 * self.readings, 10**6 - 1000 * self.readings
            batches = {1: executions}
            queue_ns = -(10**9) * self.readings
        elif self.stats == "random":
            pick = random.Random(self.readings).randrange
            frames, executions = pick(10**9), pick(10**9)
            batches = {pick(1, 9): pick(10**9) for _ in range(3)}
            queue_ns = pick(-(10**12), 10**12)
        batch_stats = [
            {"batch_size": b, "compute_infer": {"count": n, "ns": n * INFER_NS}}
            for b, n in sorted(batches.items())
        ]
        if self.stats == "no_size":
            for item in batch_stats:
                del item["batch_size"]
        return {
            "model_stats": [
                {
                    "name": MODEL,
                    "version": "1",
                    "inference_count": frames,
                    "execution_count": executions,
                    "inference_stats": {
                        "success": {"count": executions, "ns": executions * INFER_NS},
                        "queue": {"count": executions, "ns": queue_ns},
                    },
                    "batch_stats": batch_stats,
                }
            ]
        }


# ---------------------------------------------------------------------------------------
# HTTP


class _Http(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    behaviour: Behaviour

    def log_message(self, *args: Any) -> None:  # quiet
        pass

    def _send(self, status: int, body: Any = b"", kind: str = "application/json") -> None:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _hang_up(self) -> None:
        self.close_connection = True
        self.connection.shutdown(socket.SHUT_RDWR)

    def _gate(self) -> bool:
        b = self.behaviour
        if b.dead:
            self._hang_up()
            return False
        if not b.allowed({k.lower(): v for k, v in self.headers.items()}):
            self._send(401, {"error": "an access token is needed"})
            return False
        return True

    def do_GET(self) -> None:
        b = self.behaviour
        body_length = int(self.headers.get("Content-Length") or 0)
        if body_length:
            self.rfile.read(body_length)
        if not self._gate():
            return
        path = self.path.split("?")[0].rstrip("/")
        base = f"/v2/models/{MODEL}"
        if path == "/v2/health/live":
            self._send(200)
        elif path == "/v2":
            self._send(200, {"name": "hostile", "version": "0"})
        elif path == f"{base}/ready" or path == f"{base}/versions/1/ready":
            self._send(200)
        elif path.endswith("/ready"):
            self._send(400, {"error": "unknown model"})
        elif path == base:
            self._send(200, b.metadata)
        elif path == f"{base}/config":
            self._send(200, b.config)
        elif path == f"{base}/stats":
            self._stats()
        else:
            self._send(404, {"error": f"no route {path}"})

    def _stats(self) -> None:
        b = self.behaviour
        mode = b.on_stats()
        if mode == "dead":
            self._hang_up()
        elif mode == "hang":
            b.stop.wait()
            self._hang_up()
        elif mode == "refused":
            self._send(403, {"error": "This API is restricted"})
        else:
            self._send(200, b.statistics())

    def do_POST(self) -> None:
        b = self.behaviour
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if not self._gate():
            return
        length = int(self.headers.get("Inference-Header-Content-Length") or len(body))
        request = json.loads(body[:length])
        frames = int(request["inputs"][0]["shape"][0])
        mode = b.on_infer(frames)
        if mode == "dead" or mode == "close":
            self._hang_up()
        elif mode == "hang":
            b.stop.wait()
            self._hang_up()
        elif mode == "error":
            self._send(500, {"error": "internal error"})
        elif mode == "missing":
            self._send(400, {"error": f"Request for unknown model: '{MODEL}' is not found"})
        elif mode == "garbage":
            self._send(200, b"\xff\xfe\xfa not utf-8 \xc3\x28")
        elif mode == "huge":
            self._send(200, b"[" * (64 * 2**20))
        else:
            if mode == "slow":
                b.stop.wait(b.slow_s)
            width = 3 if mode == "shape" else 2
            self._send(200, {"model_name": MODEL, "outputs": [
                {"name": "y", "datatype": "FP32", "shape": [frames, width],
                 "data": [0.0] * (frames * width)}]})  # fmt: skip


# ---------------------------------------------------------------------------------------
# gRPC


def _grpc_servicer(b: Behaviour) -> Any:
    import grpc
    from google.protobuf import json_format
    from tritonclient.grpc import model_config_pb2 as config_pb2
    from tritonclient.grpc import service_pb2, service_pb2_grpc

    def gate(context: Any) -> None:
        if b.dead:
            context.abort(grpc.StatusCode.UNAVAILABLE, "the server went away")
        if not b.allowed({k.lower(): v for k, v in context.invocation_metadata()}):
            context.abort(grpc.StatusCode.UNAUTHENTICATED, "an access token is needed")

    class Servicer(service_pb2_grpc.GRPCInferenceServiceServicer):
        def ServerLive(self, request: Any, context: Any) -> Any:
            gate(context)
            return service_pb2.ServerLiveResponse(live=True)

        def ModelReady(self, request: Any, context: Any) -> Any:
            gate(context)
            return service_pb2.ModelReadyResponse(ready=request.name == MODEL)

        def ServerMetadata(self, request: Any, context: Any) -> Any:
            gate(context)
            return service_pb2.ServerMetadataResponse(name="hostile", version="0")

        def ModelMetadata(self, request: Any, context: Any) -> Any:
            gate(context)
            meta = b.metadata
            tensors = service_pb2.ModelMetadataResponse.TensorMetadata
            return service_pb2.ModelMetadataResponse(
                name=MODEL,
                platform="hostile",
                inputs=[tensors(**_tensor(t)) for t in meta.get("inputs", [])],
                outputs=[tensors(**_tensor(t)) for t in meta.get("outputs", [])],
            )

        def ModelConfig(self, request: Any, context: Any) -> Any:
            gate(context)
            config = json_format.ParseDict(b.config, config_pb2.ModelConfig())
            return service_pb2.ModelConfigResponse(config=config)

        def ModelStatistics(self, request: Any, context: Any) -> Any:
            gate(context)
            mode = b.on_stats()
            if mode == "dead":
                context.abort(grpc.StatusCode.UNAVAILABLE, "the server went away")
            if mode == "hang":
                b.stop.wait()
                context.abort(grpc.StatusCode.UNAVAILABLE, "stopped")
            if mode == "refused":
                context.abort(grpc.StatusCode.PERMISSION_DENIED, "This API is restricted")
            document = b.statistics()
            for entry in document["model_stats"]:  # uint64 fields hold no negative counts
                entry["inference_stats"]["queue"]["ns"] = abs(
                    entry["inference_stats"]["queue"]["ns"]
                )
            return json_format.ParseDict(document, service_pb2.ModelStatisticsResponse())

        def ModelInfer(self, request: Any, context: Any) -> Any:
            gate(context)
            frames = int(request.inputs[0].shape[0])
            mode = b.on_infer(frames)
            if mode in ("dead", "close"):
                context.abort(grpc.StatusCode.UNAVAILABLE, "the server went away")
            if mode == "hang":
                b.stop.wait()
                context.abort(grpc.StatusCode.UNAVAILABLE, "stopped")
            if mode == "error":
                context.abort(grpc.StatusCode.INTERNAL, "internal error")
            if mode == "missing":
                context.abort(grpc.StatusCode.NOT_FOUND, f"Request for unknown model '{MODEL}'")
            if mode == "slow":
                b.stop.wait(b.slow_s)
            width = 3 if mode == "shape" else 2
            output = service_pb2.ModelInferResponse.InferOutputTensor(
                name="y", datatype="FP32", shape=[frames, width]
            )
            return service_pb2.ModelInferResponse(
                model_name=MODEL, outputs=[output], raw_output_contents=[bytes(4 * frames * width)]
            )

    return Servicer()


def _tensor(item: dict[str, Any]) -> dict[str, Any]:
    """A tensor's metadata as gRPC's message takes it (whole-number dimensions)."""
    return {**item, "shape": [int(d) for d in item.get("shape", [])]}


class _Quiet(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hung up on a hanging or huge answer is expected here."""


@contextmanager
def serve(behaviour: Behaviour) -> Iterator[tuple[int, int]]:
    """Both servers on 127.0.0.1 for the block: yields their (HTTP, gRPC) ports."""
    import grpc
    from tritonclient.grpc import service_pb2_grpc

    handler = type("Handler", (_Http,), {"behaviour": behaviour})
    http = _Quiet(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=http.serve_forever, daemon=True)
    thread.start()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=32))
    service_pb2_grpc.add_GRPCInferenceServiceServicer_to_server(_grpc_servicer(behaviour), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        yield http.server_address[1], port
    finally:
        behaviour.stop.set()
        server.stop(grace=None)
        http.shutdown()
        http.server_close()
