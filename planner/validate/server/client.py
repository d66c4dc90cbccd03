"""The connection to a KServe v2 server, through ``tritonclient``'s asyncio clients
(``tritonclient.grpc.aio`` or ``tritonclient.http.aio``, by the target's scheme).

``open_model`` connects, checks that the server is live and the model ready, and reads the
model as the server describes it (``ServerModel``: its inputs, their datatypes and shapes,
its outputs, ``max_batch_size`` and the dynamic batcher's settings); ``Connection`` then
sends inferences of b frames of zeros (made once per batch size: the values do not change
the timing of a model that does not branch on them) and reads the server's statistics.

A server is not trusted. Every call has a time limit (``Link.timeout_s``, and no more than
what is left of the whole load test's ``Link.deadline``), every answer is read as data
that may be anything, and an answer that contradicts what was sent (an output whose
shape is not the model's for the frames sent) counts as a failure. Every failure is a
``ServerFailed`` of one line that names the target, the model and the call; reaching the
server or finding the model at all is a ``BadInput`` the same way. Headers given with the
link (an access token) go with every call and appear in no message. ``tritonclient`` is
imported here, when a connection is opened, and its absence is one line naming the extra
that installs it.
"""

from __future__ import annotations

import asyncio
import math
import re
import time
from collections.abc import Awaitable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np

from planner import limits
from planner.errors import BadInput, PlannerError
from planner.validate.server.target import Target

EXTRA = "server"
INSTALL = f"pip install -e '.[{EXTRA}]' in the planner's checkout"
CALL_TIMEOUT_S = 10.0
"""How long one call to the server may take by default (``--call-timeout-s``): reaching
it, reading the model, one inference, one reading of its statistics. A server that is up
answers the first ones in milliseconds."""
MAX_REQUEST_BYTES = 256 * 2**20
"""The largest request a load test sends (its largest batch of frames): a shape the
server declares beyond this is refused before anything is allocated."""
DATATYPES: dict[str, type] = {
    "BOOL": np.bool_,
    "INT8": np.int8,
    "INT16": np.int16,
    "INT32": np.int32,
    "INT64": np.int64,
    "UINT8": np.uint8,
    "UINT16": np.uint16,
    "UINT32": np.uint32,
    "UINT64": np.uint64,
    "FP16": np.float16,
    "FP32": np.float32,
    "FP64": np.float64,
}
"""The KServe v2 datatypes a load test sends (numeric tensors), as NumPy types."""
T = TypeVar("T")


class ServerFailed(PlannerError):
    """A call to the server failed, took longer than its time limit, or answered what
    cannot be true; one line naming the target, the model and the call. ``timed_out``
    says which of the first two; ``stopped`` that the whole load test ran out of time."""

    def __init__(
        self, what: str, detail: str = "", *, timed_out: bool = False, stopped: bool = False
    ) -> None:
        super().__init__(f"{what}: {detail}" if what and detail else what or detail)
        self.detail = detail or what
        self.timed_out = timed_out
        self.stopped = stopped


@dataclass(frozen=True)
class Link:
    """How every call reaches the server: its time limit in seconds, the monotonic time
    (``time.monotonic``) by which the whole load test must end (None: no bound), and the
    headers sent with each call (values never shown)."""

    timeout_s: float = CALL_TIMEOUT_S
    deadline: float | None = None
    headers: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not (self.timeout_s > 0 and math.isfinite(self.timeout_s)):
            raise BadInput("a call's time limit must be above 0 s")

    def limit(self) -> float:
        """The time the next call may take: the call's limit, or what is left of the
        whole load test's, whichever is less; ServerFailed (stopped) when none is left."""
        if self.deadline is None:
            return self.timeout_s
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise ServerFailed("the load test reached its time limit", stopped=True)
        return min(self.timeout_s, left)

    async def call(self, awaitable: Awaitable[T], what: str) -> T:
        """Await one call within ``limit``; ServerFailed, in one line saying ``what``
        failed, for any error or the time running out."""
        try:
            limit = self.limit()
        except ServerFailed:
            _close(awaitable)
            raise
        try:
            return await asyncio.wait_for(awaitable, limit)
        except TimeoutError:
            if self.deadline is not None and time.monotonic() >= self.deadline:
                raise ServerFailed("the load test reached its time limit", stopped=True) from None
            raise ServerFailed(what, f"no answer within {limit:g} s", timed_out=True) from None
        except Exception as exc:  # tritonclient's own, the transport's, a bad body's
            raise ServerFailed(what, reason(exc)) from None


def _close(awaitable: Awaitable[Any]) -> None:
    close = getattr(awaitable, "close", None)
    if close is not None:
        close()


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
    """One input (or output) of the model: its name, KServe datatype (``FP32``, ``UINT8``,
    …) and the shape of one frame (without the batch dimension; -1 where any size goes)."""

    name: str
    datatype: str
    shape: tuple[int, ...]


@dataclass(frozen=True)
class ServerModel:
    """A model as the server describes it. ``max_batch_size`` 0 means the model takes no
    batch dimension (one frame per execution); ``max_queue_delay_us`` is the dynamic
    batcher's wait for a fuller batch (0 when the config sets none), None when the model
    has no dynamic batcher (every request runs on its own). ``outputs`` are those the
    metadata declares (an answer is checked against them)."""

    target: Target
    name: str
    inputs: tuple[ModelInput, ...]
    max_batch_size: int
    max_queue_delay_us: float | None
    preferred_batch_sizes: tuple[int, ...] = ()
    instances: int | None = None
    platform: str = ""
    server_version: str = ""
    outputs: tuple[ModelInput, ...] = ()

    @property
    def largest_batch(self) -> int:
        """The most frames one execution takes: the model's batch limit, or 1."""
        return max(self.max_batch_size, 1)

    @property
    def batcher(self) -> dict[str, float]:
        """The batcher settings the simulator's ``triton`` policy takes for this model: its
        largest batch and its dynamic batcher's delay; a model without a dynamic batcher
        runs every request alone (batch 1, no wait). Within the ranges a plan takes."""
        if self.max_queue_delay_us is None or self.max_batch_size < 1:
            return {"max_batch": 1, "max_queue_delay_us": 0.0}
        return {
            "max_batch": min(self.largest_batch, int(limits.MAX_BATCH.high)),
            "max_queue_delay_us": min(self.max_queue_delay_us, limits.MAX_QUEUE_DELAY_US.high),
        }

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

    def __init__(self, module: Any, client: Any, model: ServerModel, link: Link) -> None:
        self._module = module
        self._client = client
        self.model = model
        self.link = link
        self._batches: dict[int, list[Any]] = {}

    @property
    def _headers(self) -> dict[str, str] | None:
        return dict(self.link.headers) or None

    def _inputs(self, frames: int) -> list[Any]:
        """The request's inputs for ``frames`` frames of zeros, made once per size."""
        made = self._batches.get(frames)
        if made is None:
            made = []
            batched = self.model.max_batch_size > 0
            for spec in self.model.inputs:
                shape = (frames, *spec.shape) if batched else spec.shape
                data: np.ndarray = np.zeros(shape, dtype=DATATYPES[spec.datatype])
                item = self._module.InferInput(spec.name, list(shape), spec.datatype)
                item.set_data_from_numpy(data)
                made.append(item)
            self._batches[frames] = made
        return made

    def prepare(self, sizes: Sequence[int]) -> None:
        """Make the inputs of these batch sizes now, before anything is timed."""
        for size in sizes:
            self._inputs(size)

    def _what(self, call: str) -> str:
        return f"the server at {self.model.target.url} ({self.model.name!r}, {call})"

    async def infer(self, frames: int = 1) -> None:
        """One inference of ``frames`` frames within the link's time limit, its answer
        checked against the model's outputs; ServerFailed for anything else."""
        what = self._what(f"an inference of {frames} frame{'s' if frames != 1 else ''}")
        result = await self.link.call(
            self._client.infer(self.model.name, self._inputs(frames), headers=self._headers),
            what,
        )
        problem = answer_problem(self.model, output_shapes(result), frames)
        if problem:
            raise ServerFailed(what, problem)

    async def statistics(self) -> dict[str, Any]:
        """The server's statistics of the model (KServe v2's, as JSON, numbers as text
        over gRPC); ServerFailed when the server refuses them (Triton can restrict them),
        does not answer in time or answers something that is not a document."""
        kwargs: dict[str, Any] = {"headers": self._headers}
        if self.model.target.protocol == "grpc":
            kwargs["as_json"] = True
        found = await self.link.call(
            self._client.get_inference_statistics(self.model.name, **kwargs),
            self._what("its statistics"),
        )
        if not isinstance(found, Mapping):
            raise ServerFailed(self._what("its statistics"), "the answer is not a document")
        return dict(found)

    async def live(self) -> bool:
        """Whether the server still says it is live (False for any failure)."""
        try:
            return bool(
                await self.link.call(
                    self._client.is_server_live(headers=self._headers), self._what("live")
                )
            )
        except ServerFailed:
            return False

    async def close(self) -> None:
        await self._client.close()


def output_shapes(result: Any) -> dict[str, tuple[int, ...]] | None:
    """The shape of each output of an answer (either protocol's), or None where the
    answer cannot be read as one."""
    try:
        response = result.get_response()
        outputs = response.get("outputs") if isinstance(response, Mapping) else response.outputs
        return {str(o["name"] if isinstance(o, Mapping) else o.name):
                tuple(int(d) for d in (o["shape"] if isinstance(o, Mapping) else o.shape))
                for o in outputs or ()}  # fmt: skip
    except Exception:  # a body that is not an answer
        return None


def answer_problem(
    model: ServerModel, shapes: Mapping[str, tuple[int, ...]] | None, frames: int
) -> str | None:
    """What in an answer to ``frames`` frames cannot be true of ``model`` (None: it is
    consistent): no outputs that can be read, a declared output missing, or an output
    whose shape is not the metadata's for the frames sent."""
    if shapes is None:
        return "the answer holds no outputs that can be read"
    batched = model.max_batch_size > 0
    for spec in model.outputs:
        shape = shapes.get(spec.name)
        if shape is None:
            return f"the answer lacks the output {spec.name!r} the model declares"
        wanted = ((frames,) if batched else ()) + spec.shape
        fits = len(shape) == len(wanted) and all(
            w < 0 or s == w for s, w in zip(shape, wanted, strict=True)
        )
        if not fits:
            return (
                f"the output {spec.name!r} has the shape {list(shape)} for {frames} frames, "
                f"where the model's metadata says {list(wanted)}"
            )
    return None


async def open_model(
    target: Target, model: str, input_shape: Sequence[int] | None = None, link: Link | None = None
) -> Connection:
    """Connect to ``target`` and read ``model``: BadInput, in one line, when the server
    cannot be reached, the model is unknown or not ready, its description cannot be read,
    or an input's shape is not fixed and ``input_shape`` (the shape of one frame of the
    model's only input) does not give it."""
    link = link or Link()
    module = require_tritonclient(target.protocol)
    where = target.url
    headers = dict(link.headers) or None
    try:
        client = module.InferenceServerClient(target.address)
    except Exception as exc:
        raise BadInput(f"cannot open a client of {where} ({reason(exc)})") from None
    try:
        try:
            live = await link.call(client.is_server_live(headers=headers), "")
        except ServerFailed as exc:
            raise BadInput(f"cannot reach the server at {where} ({exc.detail})") from None
        if not live:
            raise BadInput(f"the server at {where} answers but is not live")
        try:
            ready = await link.call(client.is_model_ready(model, headers=headers), "")
        except ServerFailed as exc:
            raise BadInput(f"the server at {where} has no model {model!r} ({exc.detail})") from None
        if not ready:
            raise BadInput(
                f"the server at {where} has no model {model!r} ready (unknown, or still loading)"
            )
        grpc = target.protocol == "grpc"
        kwargs: dict[str, Any] = {"headers": headers} | ({"as_json": True} if grpc else {})
        try:
            metadata = await link.call(client.get_model_metadata(model, **kwargs), "")
            config = await link.call(client.get_model_config(model, **kwargs), "")
            server = await link.call(client.get_server_metadata(**kwargs), "")
        except ServerFailed as exc:
            raise BadInput(
                f"the server at {where} does not describe {model!r} ({exc.detail})"
            ) from None
        if grpc and isinstance(config, Mapping):
            config = config.get("config", config)
        described = describe_model(target, model, metadata, config, server, input_shape)
    except BaseException:
        await client.close()
        raise
    return Connection(module, client, described, link)


def describe_model(
    target: Target,
    name: str,
    metadata: Any,
    config: Any,
    server: Any,
    input_shape: Sequence[int] | None = None,
) -> ServerModel:
    """The model from the server's metadata and config (as JSON, either protocol's: gRPC
    gives 64-bit numbers as text). BadInput, in one line, for a description that cannot
    be read (not a document, a field missing or of the wrong kind) and for an input that
    cannot be sent: a datatype that is not numeric, a shape with a variable dimension that
    ``input_shape`` does not fix, or a request of the largest batch above
    ``MAX_REQUEST_BYTES``."""
    where = f"the server at {target.url} describes {name!r}"
    try:
        return _describe(target, name, metadata, config, server, input_shape)
    except (KeyError, TypeError, ValueError, AttributeError, OverflowError) as exc:
        raise BadInput(f"{where} in a way that cannot be read ({reason(exc)})") from None


def _whole(value: Any, what: str) -> int:
    """A whole number from JSON (gRPC's 64-bit numbers come as text); ValueError else."""
    try:
        if isinstance(value, bool):
            raise TypeError
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{what} {str(value)[:20]!r} is not a number") from None
    if not (math.isfinite(number) and number == int(number)):
        raise ValueError(f"{what} {value!r} is not a whole number")
    return int(number)


def _tensors(items: Any, what: str) -> list[tuple[str, str, list[int]]]:
    if not isinstance(items, list):
        raise ValueError(f"its {what} are not a list")
    found = []
    for item in items:
        if not isinstance(item, Mapping) or not isinstance(item.get("name"), str):
            raise ValueError(f"an entry of its {what} has no name")
        datatype = item.get("datatype")
        if not isinstance(datatype, str) or not datatype:
            raise ValueError(f"{what[:-1]} {item['name']!r} has no datatype")
        dims = [_whole(d, f"a dimension of {item['name']!r}") for d in item.get("shape") or []]
        found.append((item["name"], datatype, dims))
    return found


def _describe(
    target: Target,
    name: str,
    metadata: Any,
    config: Any,
    server: Any,
    input_shape: Sequence[int] | None,
) -> ServerModel:
    for part, value in (("metadata", metadata), ("config", config)):
        if not isinstance(value, Mapping):
            raise ValueError(f"its {part} is not a document")
    max_batch = _whole(config.get("max_batch_size") or 0, "max_batch_size")
    if max_batch < 0:
        raise ValueError(f"max_batch_size {max_batch} is below 0")
    given = _tensors(metadata.get("inputs") or [], "inputs")
    if not given:
        raise BadInput(f"the model {name!r} at {target.url} declares no inputs")
    if input_shape is not None and len(given) > 1:
        raise BadInput(
            f"--input-shape gives one input's shape, but {name!r} has {len(given)} inputs"
        )
    batched = max_batch > 0
    inputs = []
    for input_name, datatype, shape in given:
        if datatype not in DATATYPES:
            raise BadInput(
                f"input {input_name!r} of {name!r} at {target.url} is {datatype[:20]}; a load "
                "test sends numeric tensors only (FP32, FP16, INT8, UINT8, INT32, …)"
            )
        dims = shape[1:] if batched and shape else shape  # the batch dimension comes first
        if input_shape is not None:
            dims = [int(d) for d in input_shape]
        if any(d < 0 for d in dims):
            raise BadInput(
                f"input {input_name!r} of {name!r} at {target.url} has the shape {dims} (-1: "
                "any size); give one frame's shape with --input-shape, e.g. 3,224,224"
            )
        inputs.append(ModelInput(input_name, datatype, tuple(dims)))
    size = max(max_batch, 1) * sum(
        math.prod(i.shape) * np.dtype(DATATYPES[i.datatype]).itemsize for i in inputs
    )
    if size > MAX_REQUEST_BYTES:
        raise BadInput(
            f"a request of {max(max_batch, 1)} frames of {name!r} at {target.url} would be "
            f"{size / 2**20:,.0f} MiB, above the {MAX_REQUEST_BYTES // 2**20} MiB a load "
            "test sends"
        )
    outputs = tuple(
        ModelInput(n, d, tuple(s[1:] if batched and s else s))
        for n, d, s in _tensors(metadata.get("outputs") or [], "outputs")
    )
    batcher = config.get("dynamic_batching")
    delay: float | None = None
    preferred: tuple[int, ...] = ()
    if isinstance(batcher, Mapping):
        delay = float(_whole(batcher.get("max_queue_delay_microseconds") or 0, "queue delay"))
        preferred = tuple(
            _whole(b, "a preferred batch size") for b in batcher.get("preferred_batch_size") or ()
        )
    groups = config.get("instance_group") or []
    instances = sum(_whole(g.get("count") or 1, "an instance count") for g in groups) or None
    return ServerModel(
        target=target,
        name=name,
        inputs=tuple(inputs),
        max_batch_size=max_batch,
        max_queue_delay_us=delay,
        preferred_batch_sizes=preferred,
        instances=instances,
        platform=str(metadata.get("platform") or config.get("backend") or "")[:80],
        server_version=str(server.get("version") if isinstance(server, Mapping) else "")[:80],
        outputs=outputs,
    )


def parse_shape(text: str) -> tuple[int, ...]:
    """``--input-shape 3,64,64``: one frame's shape as whole numbers from 1 up."""
    try:
        dims = tuple(int(d) for d in text.split(","))
    except ValueError:
        dims = ()
    if not dims or any(d < 1 for d in dims) or math.prod(dims) > 2**31:
        raise BadInput(f"--input-shape {text[:40]!r} is not a shape such as 3,224,224")
    return dims


HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]{1,100}")
"""A header's name as HTTP allows it (a token), of a sensible length."""


def parse_header(text: str) -> tuple[str, str]:
    """``--header NAME=VALUE`` as a (name, value) pair; BadInput, showing the name only
    (the value may be a secret), when it is not one. The name is kept in lower case: gRPC
    metadata must be, and HTTP's names ignore case."""
    name, equals, value = text.partition("=")
    name = name.strip()
    if not equals or not HEADER_NAME.fullmatch(name):
        raise BadInput(f"--header {name[:40]!r}=…: give NAME=VALUE, e.g. Authorization=Bearer …")
    if any(c in value for c in "\r\n\0"):
        raise BadInput(f"--header {name}=…: the value must be one line")
    return name.lower(), value


def reason(exc: BaseException) -> str:
    """What went wrong, in a few words on one line (tritonclient's messages can run to
    several lines of gRPC detail, and a server's own text to any length)."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 160 else text[:157] + "..."
