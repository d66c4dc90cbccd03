"""Timing device work one call at a time, and the check of that timing against PyTorch's
own benchmark timer (the ``measure`` section of ``planner bench``, in ``planner.bench.measure``).

The harness times each batched call on its own: it synchronises the device, reads the
clock, makes the call, synchronises again and reads the clock again. That is the latency
a serving worker waits for, host-side launch work included. ``torch.utils.benchmark``
instead times blocks of many calls and divides, which hides per-call synchronisation;
comparing the two on the same work shows what the harness's own method adds.

PyTorch is imported inside functions only.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from planner.curves.curve import Point
from planner.measure.devices import METAL
from planner.units import Megabytes, Milliseconds

Clock = Callable[[], int]
"""A monotonic clock in nanoseconds, such as ``time.perf_counter_ns``."""


@dataclass(frozen=True)
class Timing:
    """Wall times of individual calls, in ms, grouped by round."""

    rounds: tuple[tuple[Milliseconds, ...], ...]

    @property
    def samples(self) -> list[Milliseconds]:
        return [t for r in self.rounds for t in r]

    @property
    def median_of_round_medians(self) -> Milliseconds:
        """The point's latency: robust to one round disturbed by other work."""
        return statistics.median(statistics.median(r) for r in self.rounds)

    def percentile(self, q: float) -> Milliseconds:
        """The q-th percentile (0-100) of all calls, interpolated linearly between order
        statistics (the rule ``numpy.percentile`` uses by default)."""
        ordered = sorted(self.samples)
        position = (len(ordered) - 1) * q / 100
        low = math.floor(position)
        high = min(low + 1, len(ordered) - 1)
        return ordered[low] + (ordered[high] - ordered[low]) * (position - low)

    def point(self, batch: int, memory_mb: Megabytes | None = None) -> Point:
        """A curve point: latency, p10/p50/p90 over all calls, number of calls, memory."""

        def tidy(value: float) -> float:
            return round(value, 4)  # 0.1 microsecond, far below any timer's resolution

        return Point(
            batch=batch,
            latency_ms=tidy(self.median_of_round_medians),
            p10_ms=tidy(self.percentile(10)),
            p50_ms=tidy(self.percentile(50)),
            p90_ms=tidy(self.percentile(90)),
            n=len(self.samples),
            memory_mb=None if memory_mb is None else round(memory_mb, 1),
        )


def time_calls(
    call: Callable[[], object],
    synchronize: Callable[[], None],
    *,
    warmup: int,
    rounds: int,
    repetitions: int,
    clock: Clock = time.perf_counter_ns,
    after_round: Callable[[int], None] = lambda _r: None,
) -> Timing:
    """Time ``call`` one call at a time, with the device synchronised around each call.

    ``warmup`` untimed calls come first (kernel autotuning and caches settle there),
    then ``rounds`` x ``repetitions`` timed calls. ``after_round(r)`` runs after round
    ``r`` (0-based), outside the timed region, for progress reports.
    """
    for _ in range(warmup):
        call()
    synchronize()
    measured = []
    for index in range(rounds):
        samples = []
        for _ in range(repetitions):
            # The device is idle here: the previous call ended with a synchronisation.
            start = clock()
            call()
            synchronize()
            samples.append((clock() - start) / 1e6)
        measured.append(tuple(samples))
        after_round(index)
    return Timing(tuple(measured))


def synchronizer(torch: Any, device: str) -> Callable[[], None]:
    """A function that waits until ``device`` has finished all queued work."""
    if device == "cuda":
        return lambda: torch.cuda.synchronize()
    if device == METAL:
        return lambda: torch.mps.synchronize()
    return lambda: None  # CPU operators return when their work is done
