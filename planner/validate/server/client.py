"""The connection to a KServe v2 server, through ``tritonclient``'s asyncio clients
(``tritonclient.grpc.aio`` or ``tritonclient.http.aio``, by the target's scheme).

``open_model`` connects, checks that the server is live and the model ready, and reads the
model as the server describes it (``ServerModel``: its inputs, their datatypes and shapes,
``max_batch_size`` and the dynamic batcher's settings); ``Connection`` then sends
inferences of b frames of zeros (made once per batch size: the values do not change the
timing of a model that does not branch on them) and reads the server's statistics.

Every failure to reach the server or to find the model is a ``BadInput`` of one line that
names the target and the model. ``tritonclient`` is imported here, when a connection is
opened, and its absence is one line naming the extra that installs it.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from planner.errors import BadInput
from planner.validate.server.target import Target

EXTRA = "server"
INSTALL = f"pip install -e '.[{EXTRA}]' in the planner's checkout"
CONNECT_TIMEOUT_S = 10.0
"""How long reaching the server and reading the model may take before it counts as
unreachable (a server that is up answers these in milliseconds)."""


def require_tritonclient(protocol: str) -> Any:
    """The asyncio client module of ``protocol`` (``tritonclient.grpc.aio`` or
    ``tritonclient.http.aio``); BadInput naming the extra to install when it is absent."""
    import importlib

    try:
        return importlib.import_module(f"tritonclient.{protocol}.aio")
    except (ModuleNotFoundError, RuntimeError) as exc:
        # tritonclient raises RuntimeError when it is installed without this protocol.
        raise BadInput(
            f"a load test against a server needs tritonclient with {protocol} support "
            f"({exc}); install it with {INSTALL}"
        ) from None


@dataclass(frozen=True)
class ModelInput:
    """One input of the model: its name, KServe datatype (``FP32``, ``UINT8``, …) and the
    shape of one frame (without the batch dimension)."""

    name: str
    datatype: str
    shape: tuple[int, ...]


@dataclass(frozen=True)
class ServerModel:
    """A model as the server describes it. ``max_batch_size`` 0 means the model takes no
    batch dimension (one frame per execution); ``max_queue_delay_us`` is the dynamic
    batcher's wait for a fuller batch (0 when the config sets none), None when the model
    has no dynamic batcher (every request runs on its own)."""

    target: Target
    name: str
    inputs: tuple[ModelInput, ...]
    max_batch_size: int
    max_queue_delay_us: float | None
    preferred_batch_sizes: tuple[int, ...] = ()
    instances: int | None = None
    platform: str = ""
    server_version: str = ""

    @property
    def largest_batch(self) -> int:
        """The most frames one execution takes: the model's batch limit, or 1."""
        return max(self.max_batch_size, 1)

    def describe(self) -> dict[str, Any]:
        """The model's settings as plain values, for a load test's environment."""
        return {
            "server": self.target.url,
            "protocol": self.target.protocol,
            "model": self.name,
            "inputs": [
                {"name": i.name, "datatype": i.datatype, "shape": list(i.shape)}
                for i in self.inputs
            ],
            "max_batch_size": self.max_batch_size,
            "max_queue_delay_us": self.max_queue_delay_us,
            "preferred_batch_sizes": list(self.preferred_batch_sizes),
            "instances": self.instances,
            "platform": self.platform,
            "server_version": self.server_version,
        }


class Connection:
    """An open client of one model on one server (``open_model`` makes it); use within
    the event loop that opened it, and ``close`` it there."""

    def __init__(self, module: Any, client: Any, model: ServerModel) -> None:
        self._module = module
        self._client = client
        self.model = model
        self._batches: dict[int, list[Any]] = {}

    def _inputs(self, frames: int) -> list[Any]:
        """The request's inputs for ``frames`` frames of zeros, made once per size."""
        made = self._batches.get(frames)
        if made is None:
            from tritonclient.utils import triton_to_np_dtype

            made = []
            batched = self.model.max_batch_size > 0
            for spec in self.model.inputs:
                shape = (frames, *spec.shape) if batched else spec.shape
                data = np.zeros(shape, dtype=triton_to_np_dtype(spec.datatype))
                item = self._module.InferInput(spec.name, list(shape), spec.datatype)
                item.set_data_from_numpy(data)
                made.append(item)
            self._batches[frames] = made
        return made

    def prepare(self, sizes: Sequence[int]) -> None:
        """Make the inputs of these batch sizes now, before anything is timed."""
        for size in sizes:
            self._inputs(size)

    async def infer(self, frames: int = 1) -> None:
        """One inference of ``frames`` frames; whatever the server or the transport
        raises is raised (the caller records it as a failed frame)."""
        await self._client.infer(self.model.name, self._inputs(frames))

    async def statistics(self) -> dict[str, Any]:
        """The server's statistics of the model (KServe v2's, as JSON, numbers as text
        over gRPC); BadInput when the server refuses them (Triton can restrict them)."""
        try:
            if self.model.target.protocol == "grpc":
                found = await self._client.get_inference_statistics(self.model.name, as_json=True)
            else:
                found = await self._client.get_inference_statistics(self.model.name)
        except Exception as exc:  # tritonclient raises its own and transport errors
            raise BadInput(
                f"{self.model.target.url} does not give the statistics of "
                f"{self.model.name!r} ({_reason(exc)})"
            ) from None
        return dict(found)

    async def close(self) -> None:
        await self._client.close()


async def open_model(
    target: Target, model: str, input_shape: Sequence[int] | None = None
) -> Connection:
    """Connect to ``target`` and read ``model``: BadInput, in one line, when the server
    cannot be reached, the model is unknown or not ready, or an input's shape is not
    fixed and ``input_shape`` (the shape of one frame of the model's only input) does not
    give it."""
    module = require_tritonclient(target.protocol)
    where = target.url
    try:
        client = module.InferenceServerClient(target.address)
    except Exception as exc:
        raise BadInput(f"cannot open a client of {where} ({_reason(exc)})") from None
    try:
        try:
            live = await asyncio.wait_for(client.is_server_live(), CONNECT_TIMEOUT_S)
        except Exception as exc:
            raise BadInput(f"cannot reach the server at {where} ({_reason(exc)})") from None
        if not live:
            raise BadInput(f"the server at {where} answers but is not live")
        try:
            ready = await asyncio.wait_for(client.is_model_ready(model), CONNECT_TIMEOUT_S)
        except Exception as exc:
            raise BadInput(
                f"the server at {where} has no model {model!r} ({_reason(exc)})"
            ) from None
        if not ready:
            raise BadInput(
                f"the server at {where} has no model {model!r} ready (unknown, or still loading)"
            )
        grpc = target.protocol == "grpc"
        try:
            kwargs: dict[str, Any] = {"as_json": True} if grpc else {}
            metadata = await asyncio.wait_for(
                client.get_model_metadata(model, **kwargs), CONNECT_TIMEOUT_S
            )
            config = await asyncio.wait_for(
                client.get_model_config(model, **kwargs), CONNECT_TIMEOUT_S
            )
            server = await asyncio.wait_for(client.get_server_metadata(**kwargs), CONNECT_TIMEOUT_S)
        except Exception as exc:
            raise BadInput(
                f"the server at {where} does not describe {model!r} ({_reason(exc)})"
            ) from None
        described = describe_model(
            target, model, metadata, config.get("config", config) if grpc else config,
            server, input_shape,
        )  # fmt: skip
    except BaseException:
        await client.close()
        raise
    return Connection(module, client, described)


def describe_model(
    target: Target,
    name: str,
    metadata: Mapping[str, Any],
    config: Mapping[str, Any],
    server: Mapping[str, Any],
    input_shape: Sequence[int] | None = None,
) -> ServerModel:
    """The model from the server's metadata and config (as JSON, either protocol's: gRPC
    gives 64-bit numbers as text). BadInput when an input cannot be sent: a datatype
    without a NumPy type (BYTES, BF16), or a shape with a variable dimension that
    ``input_shape`` does not fix."""
    max_batch = int(config.get("max_batch_size") or 0)
    given = metadata.get("inputs") or []
    if not given:
        raise BadInput(f"the model {name!r} at {target.url} declares no inputs")
    if input_shape is not None and len(given) > 1:
        raise BadInput(
            f"--input-shape gives one input's shape, but {name!r} has {len(given)} inputs"
        )
    inputs = []
    for item in given:
        datatype = str(item["datatype"])
        if datatype in ("BYTES", "BF16"):
            raise BadInput(
                f"input {item['name']!r} of {name!r} is {datatype}; a load test sends numeric "
                "tensors only (FP32, FP16, INT8, UINT8, INT32, …)"
            )
        dims = [int(d) for d in item.get("shape") or []]
        if max_batch > 0 and dims:
            dims = dims[1:]  # the batch dimension (-1) comes first
        if input_shape is not None:
            dims = [int(d) for d in input_shape]
        if any(d < 0 for d in dims):
            raise BadInput(
                f"input {item['name']!r} of {name!r} has the shape {dims} (-1: any size); "
                "give one frame's shape with --input-shape, e.g. 3,224,224"
            )
        inputs.append(ModelInput(str(item["name"]), datatype, tuple(dims)))
    batcher = config.get("dynamic_batching")
    delay: float | None = None
    preferred: tuple[int, ...] = ()
    if isinstance(batcher, Mapping):
        delay = float(batcher.get("max_queue_delay_microseconds") or 0)
        preferred = tuple(int(b) for b in batcher.get("preferred_batch_size") or ())
    groups = config.get("instance_group") or []
    instances = sum(int(g.get("count") or 1) for g in groups) if groups else None
    return ServerModel(
        target=target,
        name=name,
        inputs=tuple(inputs),
        max_batch_size=max_batch,
        max_queue_delay_us=delay,
        preferred_batch_sizes=preferred,
        instances=instances,
        platform=str(metadata.get("platform") or config.get("backend") or ""),
        server_version=str(server.get("version") or ""),
    )


def parse_shape(text: str) -> tuple[int, ...]:
    """``--input-shape 3,64,64``: one frame's shape as whole numbers from 1 up."""
    try:
        dims = tuple(int(d) for d in text.split(","))
    except ValueError:
        dims = ()
    if not dims or any(d < 1 for d in dims) or math.prod(dims) > 2**31:
        raise BadInput(f"--input-shape {text!r} is not a shape such as 3,224,224")
    return dims


def _reason(exc: BaseException) -> str:
    """What went wrong, in a few words on one line (tritonclient's messages can run to
    several lines of gRPC detail)."""
    if isinstance(exc, TimeoutError | asyncio.TimeoutError):
        return f"no answer within {CONNECT_TIMEOUT_S:g} s"
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 160 else text[:157] + "..."
