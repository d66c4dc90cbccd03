"""The decode stage (SPEC §6.3): a camera's frames are decoded before the CPU pre stage.

``Decoding`` says how: ``engines`` E decoder engines (the card's NVDEC, or a MIG slice's
share of them), each taking ``decode_ms`` per frame, first come first served; or, with
E = 0, on the worker's CPU threads, ``decode_ms`` being then the CPU's time per frame; or,
with E unknown (None), a pure delay of ``decode_ms`` that never queues (what a plan can
still say of a card whose decoder count no source gives).

What each codec asks of the decoders:

- a video stream (``h264``, ``h265``) is decoded in order, every frame, whatever the worker
  later drops or overwrites: the engines carry every session's full frame rate;
- a still-image stream (``jpeg``) is decoded only for the frames taken: a session's frame
  waiting for an engine is replaced by its newer one, which keeps its place (the way a
  pre job waits for a CPU thread). A server that queues every frame (``queue = all``)
  takes every frame, so there its frames are decoded like a video's.

The engines serve frames in the order they reach the worker (capture + network), ties to
the lower session, then the earlier frame; at one instant every frame that arrives joins
(and replaces) before a free engine takes one. No decode starts at or after the end of
the run: a frame not decoded by then counts as pending, as a frame still on its way does.

Nothing a batch does feeds back into the engines, so the time each frame leaves them is
known before the run: ``decoded_times`` computes it (compiled) and
``decoded_times_reference`` (plain, event by event) must agree with it; the engines then
take that time as the frame's arrival at the CPU stages. A frame replaced while waiting
leaves with the frame that replaced it, so the engines count it overwritten.

On the CPU (E = 0) decoding is more CPU work before the GPU: with unlimited threads a
delay like the pre stage, with K threads part of the frame's pre job (a JPEG frame
replaced before its job starts is never decoded). A video stream on K threads would put
a job per frame in the threads' queue ahead of the worker's own; that is not modelled,
and a scenario asking for it is refused.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, replace

import numpy as np

from planner import limits
from planner.errors import BadInput
from planner.sim.jit import jit
from planner.sim.stages import WorkerStages
from planner.units import Milliseconds

CODECS: tuple[str, ...] = ("h264", "h265", "jpeg")
VIDEO_CODECS: tuple[str, ...] = ("h264", "h265")
DEFAULT_CODEC = "h264"
MAX_ENGINES = 64


@dataclass(frozen=True)
class Decoding:
    """The decode stage: ``engines`` decoders of ``decode_ms`` per frame each (0: decoding
    on the CPU threads, ``decode_ms`` per frame there), for a stream of ``codec``."""

    decode_ms: Milliseconds
    engines: int | None = 1
    codec: str = DEFAULT_CODEC

    def __post_init__(self) -> None:
        problems = []
        if not (
            isinstance(self.decode_ms, int | float)
            and math.isfinite(self.decode_ms)
            and 0 < self.decode_ms <= limits.STAGE_MS.high
        ):
            problems.append(
                f"the decode time per frame must be above 0 and at most "
                f"{limits.STAGE_MS.high:g} ms, not {self.decode_ms!r}"
            )
        if self.engines is not None and not (
            isinstance(self.engines, int) and 0 <= self.engines <= MAX_ENGINES
        ):
            problems.append(
                f"the decoder count must be a whole number from 0 to {MAX_ENGINES} "
                f"(0: decoding on the CPU; unset: unknown, a delay), not {self.engines!r}"
            )
        if self.codec not in CODECS:
            problems.append(f"codec {self.codec!r} is not one of {', '.join(CODECS)}")
        if problems:
            raise BadInput(problems)
        object.__setattr__(self, "decode_ms", float(self.decode_ms))

    @property
    def every_frame(self) -> bool:
        """Whether every frame is decoded (a video codec), not only the frames taken."""
        return self.codec in VIDEO_CODECS

    @property
    def on_cpu(self) -> bool:
        """Whether decoding runs on the CPU threads (no decoder engine)."""
        return self.engines == 0

    @property
    def known(self) -> bool:
        """Whether the engine count is known (else decoding is a delay that never queues)."""
        return self.engines is not None

    @property
    def capacity_fps(self) -> float:
        """The most frames per second the engines decode (infinite on the CPU, whose
        threads are judged as the CPU stages are, and where the count is unknown)."""
        if self.engines is None or self.engines == 0:
            return math.inf
        return self.engines * 1000.0 / self.decode_ms

    def busy_fraction(self, frames_per_s: float) -> float:
        """How busy the engines are decoding ``frames_per_s`` (may exceed 1)."""
        return frames_per_s / self.capacity_fps


def cpu_problem(decoding: Decoding | None, stages: WorkerStages) -> str | None:
    """Why decoding on the CPU cannot be modelled with these stages, or None."""
    if decoding is None or not decoding.on_cpu or stages.cpu_workers == 0:
        return None
    if decoding.every_frame:
        return (
            f"decoding every frame of a {decoding.codec} stream on {stages.cpu_workers} CPU "
            "threads is not modelled (each frame would queue for a thread ahead of the "
            "worker's own work): set cpu_workers to 0, give decoders, or use jpeg"
        )
    return None


def engine_stages(decoding: Decoding | None, stages: WorkerStages) -> WorkerStages:
    """The stages the engines run once the decode stage is accounted for: decoding on the
    CPU is more pre work; on decoder engines, their output times already include the
    network delay (``decoded_times``), so the engines see none."""
    if decoding is None:
        return stages
    if decoding.on_cpu:
        return replace(stages, pre_ms=stages.pre_ms + decoding.decode_ms)
    return replace(stages, network_ms=0.0)


def decoded_times(
    decoding: Decoding,
    times: np.ndarray,
    start: np.ndarray,
    network_ms: float,
    duration_ms: float,
    replaces: bool,
) -> np.ndarray:
    """When each frame (capture ``times``, session after session from ``start``) leaves
    the decoder engines; infinite for one never decoded. ``replaces``: a waiting frame is
    replaced by its session's newer one (JPEG under ``queue = newest``)."""
    if decoding.engines is None:
        return delayed(decoding, times, network_ms)
    arrival = times + network_ms if network_ms else times.astype(np.float64)
    session = np.repeat(np.arange(start.size - 1), np.diff(start))
    order = np.lexsort((np.arange(times.size), session, arrival))
    return _decode_loop(
        arrival, session, order, start.size - 1, float(decoding.decode_ms),
        int(decoding.engines), float(duration_ms), bool(replaces),
    )  # fmt: skip


def delayed(decoding: Decoding, times: np.ndarray, network_ms: float) -> np.ndarray:
    """When each frame leaves decoders of unknown count: a pure delay, no queue."""
    return (times + network_ms) + decoding.decode_ms


@jit(nogil=True)
def _decode_loop(arrival, session, order, sessions, decode, engines, duration, replaces):  # type: ignore[no-untyped-def]  # fmt: skip
    """The engines, frame by frame in ``order``: a FIFO of waiting frames (with
    ``replaces``, one per session, a newer frame taking the older's place) and each
    engine's next free time."""
    total = arrival.size
    out = np.full(total, np.inf)
    free = np.zeros(engines)
    queue = np.empty(total, np.int64)  # waiting frames (global index), in order
    head = 0
    tail = 0
    waiting = np.full(sessions, -1, np.int64)  # with ``replaces``: the slot of its frame
    replaced_by = np.full(total, -1, np.int64)  # an older frame -> the newer that replaced it
    j = 0
    while j < total or head < tail:
        # The next instant: the next arrival, or the earliest engine free with work waiting.
        t_arrive = arrival[order[j]] if j < total else np.inf
        e = 0
        for k in range(1, engines):
            if free[k] < free[e]:
                e = k
        t_free = free[e] if head < tail else np.inf
        t = min(t_arrive, t_free)
        if t >= duration:
            break
        # Every frame arriving at ``t`` joins first.
        while j < total and arrival[order[j]] == t:
            g = order[j]
            s = session[g]
            if replaces and waiting[s] >= 0:
                old = queue[waiting[s]]
                replaced_by[old] = g
                queue[waiting[s]] = g
            else:
                queue[tail] = g
                if replaces:
                    waiting[s] = tail
                tail += 1
            j += 1
        # Then every engine free at ``t`` takes the oldest waiting frame.
        while head < tail:
            e = 0
            for k in range(1, engines):
                if free[k] < free[e]:
                    e = k
            if free[e] > t:
                break
            g = queue[head]
            head += 1
            if replaces:
                waiting[session[g]] = -1
            free[e] = t + decode
            out[g] = t + decode
    # A replaced frame leaves with the frame that replaced it (the last in its chain).
    for g in range(total - 1, -1, -1):
        if replaced_by[g] >= 0:
            out[g] = out[replaced_by[g]]
    return out


def decoded_times_reference(
    decoding: Decoding,
    times: np.ndarray,
    start: np.ndarray,
    network_ms: float,
    duration_ms: float,
    replaces: bool,
) -> np.ndarray:
    """``decoded_times``, event by event: a heap of arrivals and engines finishing, a
    plain list for the queue. Slow on purpose; the engines' tests compare the two."""
    if decoding.engines is None:
        return delayed(decoding, times, network_ms)
    n = start.size - 1
    events: list[tuple[float, int, int, int, int]] = []  # (time, kind, session, frame, g)
    for s in range(n):
        for k in range(int(start[s]), int(start[s + 1])):
            heapq.heappush(events, (float(times[k]) + network_ms, 1, s, k, k))
    free = [0.0] * int(decoding.engines)
    queue: list[list[int]] = []  # [session, g], oldest first
    replaced: dict[int, int] = {}
    out = np.full(times.size, math.inf)
    while events:
        t, _, s, _, g = heapq.heappop(events)
        if t >= duration_ms:
            break
        if g >= 0:
            job = next((q for q in queue if q[0] == s), None) if replaces else None
            if job is not None:
                replaced[job[1]] = g
                job[1] = g
            else:
                queue.append([s, g])
        if events and events[0][0] == t:
            continue  # engines take frames only after every arrival of the instant
        while queue:
            e = min(range(len(free)), key=lambda i: (free[i], i))
            if free[e] > t:
                heapq.heappush(events, (free[e], 0, -1, -1, -1))  # wake when it frees
                break
            _, taken = queue.pop(0)
            free[e] = t + decoding.decode_ms
            out[taken] = free[e]
    for g in sorted(replaced, reverse=True):
        out[g] = out[replaced[g]]
    return out
