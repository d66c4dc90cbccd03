"""The server's own count of what it ran: KServe v2 model statistics, read before and
after a run, and the difference.

``inference_count`` counts frames (a request of b frames counts b), ``execution_count``
the model's executions (batches), and ``batch_stats`` the executions of each batch size
with the time spent in them. A load test reads them around each run to record the batch
sizes the server's batcher really formed, which no client can see, and how long the model
ran. The figures are the whole model's: traffic from anyone else during the run is
counted too.

A server's statistics are not trusted: ``parse_statistics`` refuses a document it cannot
read (``Unreadable``), and ``Statistics.impossible`` says what in a difference cannot be
true of the requests the client saw answered (counters that fell, fewer frames than
answers, executions without frames, batch sizes that do not add up to the frames, more
busy time than the run had). A load test then reports what needs the statistics as
unavailable rather than store figures that cannot be.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from planner.errors import BadInput
from planner.validate.server.client import Connection, ServerFailed

BUSY_MARGIN = 1.05
"""How far the busy time a server reports may exceed the run's duration (per model
instance) before it counts as impossible: clocks and the edges of a run differ a little."""


class Unreadable(BadInput):
    """A statistics document that does not hold the model's counts in a readable form."""


@dataclass(frozen=True)
class Statistics:
    """One reading of a model's statistics (or the difference of two): frames inferred,
    executions, the executions of each batch size, and the nanoseconds the executions
    spent in the model (input, inference and output), per batch size; and the requests
    that succeeded, failed, and their nanoseconds in the batcher's queue."""

    frames: int = 0
    executions: int = 0
    batches: Mapping[int, int] = field(default_factory=dict)
    compute_ns: Mapping[int, int] = field(default_factory=dict)
    succeeded: int = 0
    failed: int = 0
    queue_ns: int = 0

    def since(self, before: Statistics) -> Statistics:
        """What happened between ``before`` and this reading."""
        sizes = sorted(set(self.batches) | set(before.batches))
        batches = {b: self.batches.get(b, 0) - before.batches.get(b, 0) for b in sizes}
        compute = {b: self.compute_ns.get(b, 0) - before.compute_ns.get(b, 0) for b in sizes}
        return Statistics(
            frames=self.frames - before.frames,
            executions=self.executions - before.executions,
            batches={b: n for b, n in batches.items() if n},
            compute_ns={b: ns for b, ns in compute.items() if batches[b]},
            succeeded=self.succeeded - before.succeeded,
            failed=self.failed - before.failed,
            queue_ns=self.queue_ns - before.queue_ns,
        )

    def impossible(
        self, answered: int, duration_ms: float | None = None, instances: int = 1
    ) -> str | None:
        """What in this difference cannot be true of a span in which the client saw
        ``answered`` frames answered (and that lasted ``duration_ms`` on ``instances``
        model instances, where given); None when nothing is."""
        counters = {
            "frames": self.frames,
            "executions": self.executions,
            "successful requests": self.succeeded,
            "failed requests": self.failed,
            "queue time": self.queue_ns,
        }
        fell = [name for name, value in counters.items() if value < 0]
        fell += [f"batches of {b}" for b, n in self.batches.items() if n < 0 or b < 1]
        fell += [f"time in batches of {b}" for b, ns in self.compute_ns.items() if ns < 0]
        if fell:
            return f"its counts of {', '.join(fell[:3])} went down"
        if self.frames < answered:
            return f"it counts {self.frames} frames where it answered {answered}"
        if self.executions > self.frames:
            return f"it counts {self.executions} executions of {self.frames} frames"
        if self.batches and sum(b * n for b, n in self.batches.items()) != self.frames:
            return "its batch sizes do not add up to the frames it counts"
        if duration_ms is not None and self.busy_ms > duration_ms * max(instances, 1) * BUSY_MARGIN:
            return f"it was busy {self.busy_ms / duration_ms:.0%} of the run"
        return None

    @property
    def busy_ms(self) -> float:
        """The time the model's executions took, all added up (ms)."""
        return sum(self.compute_ns.values()) / 1e6

    @property
    def queue_ms(self) -> float:
        """The mean time a successful request waited in the batcher's queue (ms)."""
        return self.queue_ns / 1e6 / self.succeeded if self.succeeded else 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "frames": self.frames,
            "executions": self.executions,
            "batches": {str(b): n for b, n in sorted(self.batches.items())},
            "compute_ms": {str(b): ns / 1e6 for b, ns in sorted(self.compute_ns.items())},
            "succeeded": self.succeeded,
            "failed": self.failed,
            "queue_ms": self.queue_ms,
        }


def parse_statistics(document: Mapping[str, Any], model: str) -> Statistics:
    """The statistics of ``model`` from a server's answer (either protocol's JSON: gRPC
    gives 64-bit numbers as text); Unreadable when it holds none for the model or holds
    them in a form that cannot be read."""
    entries = document.get("model_stats") if isinstance(document, Mapping) else None
    if not isinstance(entries, list):
        raise Unreadable(f"the server's statistics hold nothing for {model!r}")
    entries = [m for m in entries if isinstance(m, Mapping) and m.get("name") == model]
    if not entries:
        raise Unreadable(f"the server's statistics hold nothing for {model!r}")
    total = Statistics()
    try:
        for entry in entries:  # one per loaded version
            total = _add(total, _entry(entry))
    except (KeyError, TypeError, ValueError, AttributeError, OverflowError) as exc:
        text = " ".join(str(exc).split())[:80] or type(exc).__name__
        raise Unreadable(f"the server's statistics of {model!r} cannot be read ({text})") from None
    return total


def _entry(entry: Mapping[str, Any]) -> Statistics:
    stats = entry.get("inference_stats") or {}
    batches: dict[int, int] = {}
    compute: dict[int, int] = {}
    for item in entry.get("batch_stats") or []:
        if "batch_size" not in item:
            raise ValueError("a batch size is missing")
        size = _int(item["batch_size"])
        batches[size] = _count(item.get("compute_infer"))
        compute[size] = sum(
            _ns(item.get(part)) for part in ("compute_input", "compute_infer", "compute_output")
        )
    return Statistics(
        frames=_int(entry.get("inference_count") or 0),
        executions=_int(entry.get("execution_count") or 0),
        batches=batches,
        compute_ns=compute,
        succeeded=_count(stats.get("success")),
        failed=_count(stats.get("fail")),
        queue_ns=_ns(stats.get("queue")),
    )


def _int(value: Any) -> int:
    """A whole number as JSON gives it (gRPC's 64-bit ones as text); ValueError else."""
    try:
        number = float(value) if not isinstance(value, bool) else math.nan
    except (TypeError, ValueError):
        number = math.nan
    if not math.isfinite(number) or number != int(number):
        raise ValueError(f"{str(value)[:20]!r} is not a count")
    return int(number)


def _count(part: Mapping[str, Any] | None) -> int:
    return _int((part or {}).get("count") or 0)


def _ns(part: Mapping[str, Any] | None) -> int:
    return _int((part or {}).get("ns") or 0)


def _add(a: Statistics, b: Statistics) -> Statistics:
    sizes = set(a.batches) | set(b.batches)
    return Statistics(
        frames=a.frames + b.frames,
        executions=a.executions + b.executions,
        batches={s: a.batches.get(s, 0) + b.batches.get(s, 0) for s in sizes},
        compute_ns={s: a.compute_ns.get(s, 0) + b.compute_ns.get(s, 0) for s in sizes},
        succeeded=a.succeeded + b.succeeded,
        failed=a.failed + b.failed,
        queue_ns=a.queue_ns + b.queue_ns,
    )


WITHHELD = "the server does not give its statistics"
"""How ``read_statistics`` begins its answer when the server refuses them (as opposed
to giving some that cannot be read)."""


async def read_statistics(connection: Connection) -> Statistics | str:
    """One reading of the model's statistics, or why there is none: the server refuses
    them (Triton can restrict them) or gives what cannot be read. ServerFailed when the
    call failed because the server stopped answering (it no longer says it is live) or
    the load test ran out of time: there is no reading to do without."""
    try:
        document = await connection.statistics()
    except ServerFailed as exc:
        if exc.stopped:
            raise
        if not await connection.live():
            where = connection.model.target.url
            raise ServerFailed(f"the server at {where} stopped answering ({exc.detail})") from None
        return f"{WITHHELD} ({exc.detail})"
    try:
        return parse_statistics(document, connection.model.name)
    except Unreadable as exc:
        return str(exc)
