"""A scenario: everything one simulation run depends on, as a frozen, validated value.

The same object is simulated, cached, compared and encoded into a link, so it holds plain
values only (numbers, strings, tuples) and does no I/O. Construction validates every
field and reports all problems at once with messages a user can act on.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import numpy as np

from planner import limits
from planner.errors import BadInput
from planner.sim.cascade import CascadeModel, model_problems
from planner.sim.decode import Decoding, cpu_problem, engine_stages
from planner.sim.policies import POLICIES, policy_params
from planner.sim.sharing import MODE_NAMES, Sharing
from planner.sim.stages import NO_STAGES, WorkerStages
from planner.units import FramesPerSecond, Milliseconds, Seconds

Phases = Literal["random", "even", "aligned"]
PHASES: tuple[str, ...] = ("random", "even", "aligned")
Queue = Literal["newest", "all"]
QUEUES: tuple[str, ...] = limits.QUEUES
TimeoutAction = Literal["reject", "delay"]
TIMEOUT_ACTIONS: tuple[str, ...] = limits.TIMEOUT_ACTIONS
MODES = MODE_NAMES
"""The sharing modes' names, as registered (``planner.sim.sharing``): read when used, so a
mode registered later is offered too."""

MAX_SESSIONS = int(limits.SESSIONS.high)
MAX_FPS: FramesPerSecond = limits.FPS.high
MAX_ARRIVALS = 20_000_000  # keeps one run's frame records within a few hundred MB


EXCLUSIVE = Sharing()


@dataclass(frozen=True)
class Scenario:
    """N camera sessions sharing one GPU under one scheduling policy (SPEC §3.3).

    ``latency_ms[b - 1]`` is the latency of a batch of ``b`` frames on the card as measured
    (exclusive use); the table must cover every batch up to ``sessions`` (at most one frame
    per session can be pending, so no batch is larger). The MPS and derived MIG models
    take the card's best throughput over batch 1..``peak_upto`` of the table (None: the
    whole table); the planner passes max(64, the largest batch measured), so that a run's
    result does not depend on how far a search or a page looks
    (``planner.sim.sharing.mps.peak_range``).

    Policy parameters left as None take the policy's default; parameters a policy does not
    use are dropped, so two scenarios that simulate the same thing compare equal.

    The worker beyond the GPU (SPEC §5.1) is ``stages`` (``planner.sim.stages``): the
    network delay each way, the CPU work before and after the GPU and the threads that
    run it; ``overhead_ms`` is a constant added to end-to-end latency that occupies
    nothing. ``memory_batch_limit`` is the largest batch that fits in the GPU's memory
    (``planner.sim.memory``), which caps every policy's batch; None is no limit. A limit
    that cannot bind (at least the session count, or a policy that runs one frame
    at a time) is dropped, like unused policy parameters.

    ``queue`` is what the server keeps of a session's frames. ``newest`` (SPEC §3.3, the
    reference worker): a session holds at most one pending frame, a newer one overwrites
    it. ``all`` (Triton, KServe and most inference servers): every frame is a request that
    waits in one queue, oldest first, until it is batched, rejected or timed out, so past
    saturation latency grows through the run instead of frames being dropped
    (``planner.sim.queue_all``). Under ``all`` a batch may hold several frames of one
    session: the triton and max-batch policies batch up to ``max_batch`` requests; the
    others at most ``sessions`` (more only once the queue holds more than a frame per
    session, i.e. past saturation, where a run fails on its latency anyway).
    ``max_queue_size`` rejects a request that finds that many waiting (None: no bound);
    ``queue_timeout_us`` is how long a request may wait before ``timeout_action`` applies
    to it: ``reject`` drops it, ``delay`` serves it only when no request within its
    timeout waits (Triton's ``default_queue_policy``). These three are dropped under
    ``newest``. A finite pool of CPU threads is not modelled with ``all``.
    ``decode`` is the decode stage before the CPU pre stage (``planner.sim.decode``; None:
    none, the first waves' worker, whose frames arrive ready for the pre stage).
    ``spread[b - 1]`` is the sigma of the lognormal multiplier of a batch of ``b``'s
    duration, whose median is the table's value (``planner.sim.batch_time``); it covers
    the table like ``latency_ms``. Empty (and all zeros, which is the same model) means
    every batch takes exactly its table value.
    """

    latency_ms: tuple[Milliseconds, ...]
    sessions: int
    policy: str = "oldest-first"
    fps: tuple[FramesPerSecond, ...] = (30.0,)
    duration_s: Seconds = 30.0
    phases: Phases = "random"
    seed: int = 0
    jitter_ms: Milliseconds = 0.0
    overhead_ms: Milliseconds = 0.0
    max_batch: int | None = None
    max_queue_delay_us: float | None = None
    slo_ms: Milliseconds | None = None
    sharing: Sharing = field(default=EXCLUSIVE)
    stages: WorkerStages = field(default=NO_STAGES)
    memory_batch_limit: int | None = None
    peak_upto: int | None = None
    queue: Queue = "newest"
    max_queue_size: int | None = None
    queue_timeout_us: float | None = None
    timeout_action: TimeoutAction = "reject"
    spread: tuple[float, ...] = ()
    cascade: tuple[CascadeModel, ...] = ()
    decode: Decoding | None = None

    def __post_init__(self) -> None:
        problems = _problems(self)
        if problems:
            raise BadInput(problems)
        # Canonical form: a tuple of floats, parameters the policy does not use dropped.
        object.__setattr__(self, "latency_ms", tuple(float(v) for v in self.latency_ms))
        object.__setattr__(self, "fps", tuple(float(v) for v in self.fps))
        spread = tuple(float(v) for v in self.spread)
        object.__setattr__(self, "spread", spread if any(spread) else ())
        object.__setattr__(self, "cascade", tuple(self.cascade))
        used = POLICIES[self.policy].params
        for name in ("max_batch", "max_queue_delay_us", "slo_ms"):
            if name not in used:
                object.__setattr__(self, name, None)
        peak = self.peak_upto
        if peak is not None and (
            peak >= len(self.latency_ms) or not self.sharing.kind.derived(self.sharing)
        ):
            object.__setattr__(self, "peak_upto", None)  # the whole table, or not used
        if self.queue == "newest":
            object.__setattr__(self, "max_queue_size", None)
            object.__setattr__(self, "queue_timeout_us", None)
        if self.queue_timeout_us is None:
            object.__setattr__(self, "timeout_action", "reject")
        limit = self.memory_batch_limit
        if limit is not None and (
            limit >= self.largest_batch(memory=False) or POLICIES[self.policy].one_at_a_time
        ):
            object.__setattr__(self, "memory_batch_limit", None)

    def largest_batch(self, memory: bool = True) -> int:
        """The largest batch the scenario can form: ``sessions``, or under ``queue = all``
        with a policy that batches up to ``max_batch`` requests, the larger of the two;
        with ``memory``, at most the memory batch limit."""
        largest = self.sessions
        if self.queue == "all" and "max_batch" in POLICIES[self.policy].params:
            largest = max(largest, int(self.param("max_batch")))
        if memory and self.memory_batch_limit is not None:
            largest = min(largest, self.memory_batch_limit)
        return largest

    @property
    def session_fps(self) -> tuple[FramesPerSecond, ...]:
        """Frames per second of each session (a single value applies to all)."""
        return self.fps * self.sessions if len(self.fps) == 1 else self.fps

    @property
    def duration_ms(self) -> Milliseconds:
        # Rounded to a nanosecond: 4.03 s * 1000 is 4030.0000000000005 in binary floating
        # point, which would let a frame arriving at exactly 4030 ms into the run.
        return round(self.duration_s * 1000.0, 6)

    @property
    def non_gpu_ms(self) -> Milliseconds:
        """A frame's time outside the GPU when nothing waits for a CPU thread or a
        decoder: ``2 * network_ms + pre_ms + post_ms + overhead_ms`` (SPEC §5.1), and the
        decode time with a decode stage."""
        decoding = 0.0 if self.decode is None else self.decode.decode_ms
        return self.stages.outside_ms(self.overhead_ms) + decoding

    @property
    def cpu_pool(self) -> bool:
        """Whether CPU work queues for a finite pool of threads (K >= 1 and a stage > 0)."""
        return self.engine_stages.cpu_pool

    @property
    def engine_stages(self) -> WorkerStages:
        """The stages as the engines run them, the decode stage accounted for
        (``planner.sim.decode.engine_stages``): the scenario's own without one."""
        return engine_stages(self.decode, self.stages)

    @property
    def takes_time_outside(self) -> bool:
        """Whether a frame spends time outside the GPU: in the stages or decoding."""
        return self.stages.takes_time or self.decode is not None

    def param(self, name: str) -> float:
        """A policy parameter's value, the policy's default where not set."""
        value = getattr(self, name)
        if value is None:
            value = POLICIES[self.policy].defaults[name]
        return float(value)

    def policy_params(self) -> np.ndarray:
        """The policy's parameter array, defaults filled in (``planner.sim.policies``)."""
        return policy_params(
            self.policy,
            {
                "max_batch": self.max_batch,
                "max_queue_delay_us": self.max_queue_delay_us,
                "slo_ms": self.slo_ms,
            },
            batch_limit=self.memory_batch_limit,
        )

    def with_(self, **changes: Any) -> Scenario:
        """A copy with some fields changed (validated again)."""
        return replace(self, **changes)

    def with_seed(self, seed: int) -> Scenario:
        """``with_(seed=seed)`` without validating the other fields again: nothing else
        depends on the seed, and a sweep makes one such copy per run (validating a big
        card's table each time cost a fifth of a small run)."""
        if not (isinstance(seed, int) and limits.SEED.holds(seed)):
            return self.with_(seed=seed)  # refused with the usual message
        seeded = copy.copy(self)
        object.__setattr__(seeded, "seed", seed)
        return seeded


def _problems(s: Scenario) -> list[str]:
    problems: list[str] = []
    if not (isinstance(s.sessions, int) and limits.SESSIONS.holds(s.sessions)):
        problems.append(f"sessions must be {limits.SESSIONS.words()}")
        return problems
    if s.policy not in POLICIES:
        problems.append(f"policy {s.policy!r} is not one of {', '.join(POLICIES)}")
        return problems
    try:
        table = np.asarray(s.latency_ms, dtype=np.float64)
    except (TypeError, ValueError):
        table = np.array([np.nan])
    if s.queue not in QUEUES:
        problems.append(f"queue {s.queue!r} is not one of {', '.join(QUEUES)}")
        return problems
    largest = s.sessions
    if s.queue == "all" and "max_batch" in POLICIES[s.policy].params:
        given = s.max_batch if s.max_batch is not None else POLICIES[s.policy].defaults["max_batch"]
        if isinstance(given, int | float) and limits.MAX_BATCH.holds(given):
            largest = max(largest, int(given))
    if table.ndim != 1 or table.size < largest:
        what = (
            f"{s.sessions} sessions can form a batch of {s.sessions}"
            if largest == s.sessions
            else f"a server that queues every frame can form a batch of {largest} (max_batch)"
        )
        problems.append(f"the latency table covers batch 1..{table.size} but {what}")
    if not (np.all(np.isfinite(table)) and np.all(table > 0)):
        problems.append("every latency in the table must be a finite number above zero")
    elif np.any(np.diff(table) < 0):
        problems.append("latency must not decrease with batch size")
    problems.extend(spread_problems(s.spread, table.size))
    if len(s.fps) not in (1, s.sessions):
        problems.append(
            f"give one frame rate for all sessions or one per session ({s.sessions}), "
            f"not {len(s.fps)}"
        )
    if not all(limits.FPS.holds(v) for v in s.fps):
        problems.append(f"frame rates must be {limits.FPS.words()} fps")
    if not limits.DURATION_S.holds(s.duration_s):
        problems.append(f"duration must be {limits.DURATION_S.words()} s")
    if s.phases not in PHASES:
        problems.append(f"phases {s.phases!r} is not one of {', '.join(PHASES)}")
    if not (isinstance(s.seed, int) and limits.SEED.holds(s.seed)):
        problems.append(f"seed must be {limits.SEED.words()}")
    if not limits.JITTER_MS.holds(s.jitter_ms):
        problems.append(f"jitter must be {limits.JITTER_MS.words()} ms")
    if not limits.OVERHEAD_MS.holds(s.overhead_ms):
        problems.append(f"overhead must be {limits.OVERHEAD_MS.words()} ms")
    if not isinstance(s.stages, WorkerStages):
        problems.append("stages must be a WorkerStages value (planner.sim.stages)")
    if s.peak_upto is not None and not (
        isinstance(s.peak_upto, int) and limits.MAX_BATCH.holds(s.peak_upto)
    ):
        problems.append(f"peak_upto must be {limits.MAX_BATCH.words()}")
    limit = s.memory_batch_limit
    if limit is not None and not (isinstance(limit, int) and limits.MAX_BATCH.holds(limit)):
        problems.append(f"the memory batch limit must be {limits.MAX_BATCH.words()}")
    if s.max_batch is not None and not (
        isinstance(s.max_batch, int) and limits.MAX_BATCH.holds(s.max_batch)
    ):
        problems.append(f"max batch must be {limits.MAX_BATCH.words()}")
    if s.max_queue_delay_us is not None and not limits.MAX_QUEUE_DELAY_US.holds(
        s.max_queue_delay_us
    ):
        problems.append(f"max queue delay must be {limits.MAX_QUEUE_DELAY_US.words()} µs")
    if s.slo_ms is not None and not limits.SLO_MS.holds(s.slo_ms):
        problems.append(f"the latency objective (slo_ms) must be {limits.SLO_MS.words()} ms")
    if s.max_queue_size is not None and not (
        isinstance(s.max_queue_size, int) and limits.MAX_QUEUE_SIZE.holds(s.max_queue_size)
    ):
        problems.append(f"max queue size must be {limits.MAX_QUEUE_SIZE.words()}")
    if s.queue_timeout_us is not None and not limits.QUEUE_TIMEOUT_US.holds(s.queue_timeout_us):
        problems.append(f"the queue timeout must be {limits.QUEUE_TIMEOUT_US.words()} µs")
    if s.timeout_action not in TIMEOUT_ACTIONS:
        problems.append(
            f"timeout action {s.timeout_action!r} is not one of {', '.join(TIMEOUT_ACTIONS)}"
        )
    if (
        s.queue == "all"
        and isinstance(s.stages, WorkerStages)
        and (s.decode is None or isinstance(s.decode, Decoding))
        and engine_stages(s.decode, s.stages).cpu_pool
    ):
        problems.append(
            "a server that queues every frame (queue all) is modelled with unlimited CPU "
            "threads only: set cpu_workers to 0"
        )
    if not isinstance(s.cascade, tuple | list) or not limits.CASCADE_MODELS.holds(len(s.cascade)):
        problems.append(f"a cascade has {limits.CASCADE_MODELS.words()} models after the first")
    else:
        for model in s.cascade:
            problems.extend(model_problems(model))
    if s.decode is not None and not isinstance(s.decode, Decoding):
        problems.append("decode must be a Decoding value (planner.sim.decode) or None")
    elif isinstance(s.stages, WorkerStages):
        problem = cpu_problem(s.decode, s.stages)
        if problem:
            problems.append(problem)
    if not isinstance(s.sharing, Sharing):
        problems.append("sharing must be a Sharing value")
    if not problems:
        problems.extend(s.sharing.kind.run_problems(s.sharing, s.duration_s))
    if not problems:
        problem = frames_problem(sum(s.session_fps), s.duration_s)
        if problem:
            problems.append(problem)
    return problems


def spread_problems(spread: object, size: int) -> list[str]:
    """What is wrong with a batch-time spread for a table of ``size`` batch sizes."""
    try:
        sigma = np.asarray(spread, dtype=np.float64)
    except (TypeError, ValueError):
        return ["the spread must be numbers, one per batch size of the table"]
    if sigma.ndim != 1 or sigma.size not in (0, size):
        return [
            f"the spread has {sigma.size} values for a table of {size} batch sizes "
            "(give none, or one per batch size)"
        ]
    if not all(limits.SPREAD_SIGMA.holds(float(v)) for v in sigma):
        return [f"every spread (sigma of ln batch time) must be {limits.SPREAD_SIGMA.words()}"]
    return []


def frames_problem(total_fps: FramesPerSecond, duration_s: Seconds) -> str | None:
    """Why a run of these sessions (their frame rates added up) is too long, or None."""
    arrivals = total_fps * duration_s
    if arrivals <= MAX_ARRIVALS:
        return None
    return (
        f"the scenario has about {arrivals:,.0f} frames; at most {MAX_ARRIVALS:,} "
        "fit in one run (shorten the duration or lower the frame rates)"
    )
