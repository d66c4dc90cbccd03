"""The server's own count of what it ran: KServe v2 model statistics, read before and
after a run, and the difference.

``inference_count`` counts frames (a request of b frames counts b), ``execution_count``
the model's executions (batches), and ``batch_stats`` the executions of each batch size
with the time spent in them. A load test reads them around each run to record the batch
sizes the server's batcher really formed, which no client can see, and how long the model
ran. The figures are the whole model's: traffic from anyone else during the run is
counted too.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from planner.errors import BadInput


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
    gives 64-bit numbers as text); BadInput when it holds none for the model."""
    entries = [m for m in document.get("model_stats") or [] if m.get("name") == model]
    if not entries:
        raise BadInput(f"the server's statistics hold nothing for {model!r}")
    total = Statistics()
    for entry in entries:  # one per loaded version
        stats = entry.get("inference_stats") or {}
        batches: dict[int, int] = {}
        compute: dict[int, int] = {}
        for item in entry.get("batch_stats") or []:
            size = int(item["batch_size"])
            batches[size] = _count(item.get("compute_infer"))
            compute[size] = sum(
                _ns(item.get(part)) for part in ("compute_input", "compute_infer", "compute_output")
            )
        total = _add(
            total,
            Statistics(
                frames=int(entry.get("inference_count") or 0),
                executions=int(entry.get("execution_count") or 0),
                batches=batches,
                compute_ns=compute,
                succeeded=_count(stats.get("success")),
                failed=_count(stats.get("fail")),
                queue_ns=_ns(stats.get("queue")),
            ),
        )
    return total


def _count(part: Mapping[str, Any] | None) -> int:
    return int((part or {}).get("count") or 0)


def _ns(part: Mapping[str, Any] | None) -> int:
    return int((part or {}).get("ns") or 0)


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
