"""The server's batch curve, measured two ways, and the per-request cost between them.

- *single*: one request of b frames at a time, as ``perf_analyzer`` measures a model: the
  cost of a batch of b that arrives as one request;
- *concurrent*: b requests of one frame each, sent at once and timed until the last
  answer: the cost of a batch of b that the server's batcher gathers from b requests, the
  way session traffic reaches it (every frame its own request).

Both are timed at the client, so both include the transport and the server's handling of
the request. With a dynamic batcher, a request that does not fill the preferred batch
waits up to ``max_queue_delay_microseconds`` before it runs; the simulator's ``triton``
policy models that wait itself, so each point has the mean time the server says the
requests spent in its queue (its statistics, read around the timed calls) taken out. What
is left is what one execution of b frames costs as seen from the client. Where the server
gives no statistics, or gives some that cannot be true of the calls just made (counters
that fell, or a mean queue time below 0 or above the calls' own median), nothing is
taken out and the sweep's ``notes`` say why.

The difference between the two is what b - 1 extra requests cost: ``per_request_ms``.
"""

from __future__ import annotations

import asyncio
import statistics as stats
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import numpy as np

from planner.curves.curve import BATCHER_KEY, Curve, Point, make_curve
from planner.errors import BadInput
from planner.limits import MIN_LATENCY_MS
from planner.units import Milliseconds
from planner.validate.server.client import Connection
from planner.validate.server.statistics import Statistics, read_statistics

SINGLE, CONCURRENT = "single", "concurrent"
WAYS: dict[str, str] = {
    SINGLE: "server: one request of b frames at a time",
    CONCURRENT: "server: b requests of one frame at once",
}
"""How each curve was measured, as its environment's ``source`` says it."""
_PRECISIONS = {"FP32": "fp32", "FP16": "fp16", "BF16": "bf16", "INT8": "int8"}


@dataclass(frozen=True)
class Sweep:
    """What one way of measuring found per batch size: the client's timings (ms), the
    server's mean queue time of the requests (ms), and the batch sizes it ran."""

    way: str
    timings: dict[int, list[float]] = field(default_factory=dict)
    queue_ms: dict[int, float] = field(default_factory=dict)
    ran: dict[int, dict[int, int]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def latency_ms(self, batch: int) -> Milliseconds:
        """The point's latency: the median timing less the server's queue time."""
        return max(float(np.median(self.timings[batch])) - self.queue_ms[batch], MIN_LATENCY_MS)

    @property
    def batches(self) -> tuple[int, ...]:
        return tuple(sorted(self.timings))


Step = Callable[[str], None]


async def sweep(
    connection: Connection,
    way: str,
    batches: Sequence[int],
    warmup: int,
    repetitions: int,
    step: Step | None = None,
) -> Sweep:
    """Measure ``way`` (``SINGLE`` or ``CONCURRENT``) at each batch size: ``warmup``
    untimed calls, then ``repetitions`` timed ones, with the server's statistics read
    around the timed calls."""
    found = Sweep(way)
    for batch in batches:
        if step is not None:
            step(f"batch {batch}, {WAYS[way].removeprefix('server: ')}")
        for _ in range(warmup):
            await _call(connection, way, batch)
        before = await read_statistics(connection)
        timings = []
        for _ in range(repetitions):
            start = time.perf_counter_ns()
            await _call(connection, way, batch)
            timings.append((time.perf_counter_ns() - start) / 1e6)
        after = await read_statistics(connection)
        found.timings[batch] = timings
        found.queue_ms[batch] = 0.0
        found.ran[batch] = {}
        ran = _difference(before, after, repetitions * batch, float(np.median(timings)))
        if isinstance(ran, str):
            if ran not in found.notes:
                found.notes.append(ran)
            continue
        found.queue_ms[batch] = ran.queue_ms
        found.ran[batch] = dict(ran.batches)
    return found


def _difference(
    before: Statistics | str, after: Statistics | str, answered: int, median_ms: float
) -> Statistics | str:
    """What the server ran over the timed calls, or why it cannot be used."""
    for reading in (before, after):
        if isinstance(reading, str):
            return f"{reading}; the queue time is unavailable"
    assert isinstance(before, Statistics) and isinstance(after, Statistics)
    ran = after.since(before)
    problem = ran.impossible(answered)
    if problem is None and not (0.0 <= ran.queue_ms <= median_ms):
        problem = f"a mean queue time of {ran.queue_ms:g} ms for calls of {median_ms:g} ms"
    if problem is not None:
        return f"the server's statistics cannot be true ({problem}); the queue time is unavailable"
    return ran


async def _call(connection: Connection, way: str, batch: int) -> None:
    if way == SINGLE:
        await connection.infer(batch)
    else:
        await asyncio.gather(*(connection.infer(1) for _ in range(batch)))


def per_request_ms(single: Sweep, concurrent: Sweep) -> Milliseconds:
    """What each request beyond the first adds to a batch, in ms, from the two sweeps.

    Model: a batch of b frames gathered from b requests costs what one request of b frames
    costs plus a fixed cost per extra request,
    ``concurrent(b) - single(b) = per_request * (b - 1)``. The estimate is the
    non-negative least-squares fit of that line through the origin over the batch sizes
    both sweeps measured (with one unknown, NNLS is the least-squares slope clipped at
    0): ``max(0, Σ d(b)(b - 1) / Σ (b - 1)²)`` with ``d(b)`` the difference of the points.
    Batch 1 carries no information (both ways send one request) and has weight 0; with
    no batch above 1 the estimate is 0.

    Returns the cost per request in ms (0 when extra requests cost nothing measurable).
    """
    shared = [b for b in single.batches if b in concurrent.timings and b > 1]
    if not shared:
        return 0.0
    extra = np.array([b - 1 for b in shared], np.float64)
    gap = np.array([concurrent.latency_ms(b) - single.latency_ms(b) for b in shared])
    return float(max(0.0, float(extra @ gap) / float(extra @ extra)))


def make_server_curve(
    found: Sweep,
    connection: Connection,
    card: str,
    per_request: Milliseconds = 0.0,
) -> Curve:
    """One sweep as a stored curve (source ``measured``); its environment says which way
    it was measured and on which server, model and protocol, with the raw timings.

    With ``per_request`` (the single-request sweep), the curve carries that cost per
    request (``Curve.per_request_ms``) and its points are the timings less one request's
    cost, so that a plan's table, ``L(b) + b * per_request``, is what b single-frame
    requests cost this server, as session traffic reaches it."""
    model = connection.model
    points = []
    for batch in found.batches:
        timings = found.timings[batch]
        shift = found.queue_ms[batch] + per_request
        p10, p50, p90, p99 = (
            max(float(v) - shift, MIN_LATENCY_MS) for v in np.percentile(timings, [10, 50, 90, 99])
        )
        points.append(
            Point(
                batch=batch,
                latency_ms=max(found.latency_ms(batch) - per_request, MIN_LATENCY_MS),
                p10_ms=p10, p50_ms=p50, p90_ms=p90, p99_ms=p99,
                std_ms=float(stats.pstdev(timings)) if len(timings) > 1 else None,
                n=len(timings),
            )
        )  # fmt: skip
    environment: dict[str, Any] = {
        "source": WAYS[found.way],
        "way": found.way,
        **model.describe(),
        "client_median_ms": {str(b): float(np.median(found.timings[b])) for b in found.batches},
        "queue_ms": {str(b): found.queue_ms[b] for b in found.batches},
        "server_batches": {
            str(b): {str(s): n for s, n in sorted(found.ran[b].items())} for b in found.batches
        },
        # The server's batcher: the defaults of a plan on this curve (``Curve.batcher``).
        BATCHER_KEY: model.batcher,
        **({"per_request_ms": per_request} if per_request else {}),
        **({"statistics": list(found.notes)} if found.notes else {}),
    }
    name = model.name if found.way == SINGLE else f"{model.name} (one frame per request)"
    try:
        return make_curve(
            model=name,
            card=card,
            precision=_PRECISIONS.get(model.inputs[0].datatype),
            points=points,
            source="measured",
            created_at=datetime.now(UTC).replace(microsecond=0),
            environment=environment,
        )
    except BadInput as exc:
        raise BadInput([f"the server's {found.way} curve: {p}" for p in exc.problems]) from None
