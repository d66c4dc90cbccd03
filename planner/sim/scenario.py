"""A scenario: everything one simulation run depends on, as a frozen, validated value.

The same object is simulated, cached, compared and encoded into a link, so it holds plain
values only (numbers, strings, tuples) and does no I/O. Construction validates every
field and reports all problems at once with messages a user can act on.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import Any, Literal

import numpy as np

from planner import limits
from planner.errors import BadInput
from planner.sim.policies import POLICIES, policy_params
from planner.sim.stages import NO_STAGES, WorkerStages
from planner.units import FramesPerSecond, Megabytes, Milliseconds, Seconds, is_finite

Phases = Literal["random", "even", "aligned"]
PHASES: tuple[str, ...] = ("random", "even", "aligned")
Mode = Literal["exclusive", "time-slicing", "mps", "mig"]
MODES: tuple[str, ...] = ("exclusive", "time-slicing", "mps", "mig")

MAX_SESSIONS = int(limits.SESSIONS.high)
MAX_FPS: FramesPerSecond = limits.FPS.high
MAX_DURATION_S: Seconds = limits.DURATION_S.high
MAX_ARRIVALS = 20_000_000  # keeps one run's frame records within a few hundred MB
MAX_COTENANT_CHANGES = 2_000_000  # keeps one run's co-tenant activity within tens of MB
MAX_MEMORY_MB: Megabytes = limits.MEMORY_MB.high
"""The largest memory figure taken anywhere (16 TiB in MB of 2^20 bytes): far above any
card, low enough to catch a figure given in bytes."""
MAX_COTENANTS = int(limits.COTENANTS.high)


@dataclass(frozen=True)
class Sharing:
    """How the card is shared (SPEC §3.4); ``exclusive`` is the curve as measured.

    - ``time-slicing``: ``cotenants`` are the duty cycles (0..1) of the other jobs on the
      card, each alternating exponential busy and idle periods with a mean busy period of
      ``busy_period_ms``; while k of them are busy a running batch progresses at 1/(k+1)
      of its speed.
    - ``mps``: we get ``mps_share`` percent of the card's compute.
    - ``mig``: an instance of ``mig_slices`` of the card's ``mig_total`` compute slices
      (profile ``mig_profile``), with ``mig_memory_gb`` of memory, of which one card holds
      at most ``mig_instances``. ``mig_derived`` is False when the curve was measured on
      that profile, so it is used as it is.

    Memory (SPEC §5.1, used by ``planner.sim.memory``): under time-slicing the co-tenants
    declare ``cotenant_memory_mb`` (one value per co-tenant, or one for all; time-slicing
    has no memory isolation, so their memory is not ours); under MPS ``mps_memory_mb`` is
    our client's memory limit, if one is set.
    """

    mode: Mode = "exclusive"
    cotenants: tuple[float, ...] = ()
    busy_period_ms: Milliseconds = 50.0
    mps_share: float | None = None
    mig_profile: str | None = None
    mig_slices: int | None = None
    mig_total: int | None = None
    mig_derived: bool = True
    mig_instances: int | None = None
    mig_memory_gb: float | None = None
    cotenant_memory_mb: tuple[Megabytes, ...] = ()
    mps_memory_mb: Megabytes | None = None

    def __post_init__(self) -> None:
        problems = []
        if self.mode not in MODES:
            problems.append(f"sharing mode {self.mode!r} is not one of {', '.join(MODES)}")
        for duty in self.cotenants:
            if not limits.DUTY.holds(duty):
                problems.append(f"co-tenant duty cycle {duty!r} must be {limits.DUTY.words()}")
        if not limits.COTENANTS.holds(len(self.cotenants)):
            problems.append(f"at most {limits.COTENANTS.high:g} co-tenants")
        problems.extend(_memory_problems(self))
        if not limits.BUSY_PERIOD_MS.holds(self.busy_period_ms):
            problems.append(f"the mean busy period must be {limits.BUSY_PERIOD_MS.words()} ms")
        if self.mode == "mps" and not limits.MPS_SHARE.holds(self.mps_share):
            problems.append(f"the MPS compute share must be {limits.MPS_SHARE.words()} (%)")
        if self.mode == "mig":
            slices, total = self.mig_slices, self.mig_total
            if not (isinstance(slices, int) and isinstance(total, int) and 0 < slices <= total):
                problems.append("a MIG instance needs its slice count and the card's total")
            instances = self.mig_instances
            if instances is not None and not (isinstance(instances, int) and 1 <= instances <= 64):
                problems.append("a MIG profile's instance count must be a whole number from 1")
            if self.mig_memory_gb is not None and not (
                is_finite(self.mig_memory_gb) and self.mig_memory_gb > 0
            ):
                problems.append("a MIG profile's memory must be a positive number of GB")
        if problems:
            raise BadInput(problems)

    @property
    def label(self) -> str:
        if self.mode == "time-slicing":
            duties = ", ".join(f"{d:g}" for d in self.cotenants) or "none"
            return f"time-slicing (co-tenants busy {duties})"
        if self.mode == "mps":
            return f"MPS ({self.mps_share:g}% share)"
        if self.mode == "mig":
            return f"MIG {self.mig_profile or f'{self.mig_slices}/{self.mig_total}'}"
        return "exclusive"


def _memory_problems(sharing: Sharing) -> list[str]:
    problems = []
    memory = sharing.cotenant_memory_mb
    if not isinstance(memory, tuple) or not all(
        is_finite(v) and 0 <= v <= MAX_MEMORY_MB for v in memory
    ):
        problems.append(
            f"co-tenant memory must be numbers of MB from 0 to {MAX_MEMORY_MB:g}, one per "
            "co-tenant or one for all"
        )
    elif memory:
        if sharing.mode != "time-slicing":
            problems.append("co-tenant memory applies to time-slicing only")
        elif len(memory) not in (1, len(sharing.cotenants)):
            problems.append(
                f"give one co-tenant memory figure for all or one per co-tenant "
                f"({len(sharing.cotenants)}), not {len(memory)}"
            )
    limit = sharing.mps_memory_mb
    if limit is not None:
        if not (is_finite(limit) and 0 < limit <= MAX_MEMORY_MB):
            problems.append(
                f"the MPS memory limit must be above 0 and at most {MAX_MEMORY_MB:g} MB"
            )
        elif sharing.mode != "mps":
            problems.append("an MPS memory limit applies to MPS only")
    return problems


EXCLUSIVE = Sharing()


@dataclass(frozen=True)
class Scenario:
    """N camera sessions sharing one GPU under one scheduling policy (SPEC §3.3).

    ``latency_ms[b - 1]`` is the latency of a batch of ``b`` frames on the card as measured
    (exclusive use); the table must cover every batch up to ``sessions`` (at most one frame
    per session can be pending, so no batch is larger). The MPS and MIG models use the
    whole table to find the card's best throughput, so the planner passes tables for batch
    1..max(64, sessions).

    Policy parameters left as None take the policy's default; parameters a policy does not
    use are dropped, so two scenarios that simulate the same thing compare equal.

    The worker beyond the GPU (SPEC §5.1) is ``stages`` (``planner.sim.stages``): the
    network delay each way, the CPU work before and after the GPU and the threads that
    run it; ``overhead_ms`` is a constant added to end-to-end latency that occupies
    nothing. ``memory_batch_limit`` is the largest batch that fits in the GPU's memory
    (``planner.sim.memory``), which caps every policy's batch; None is no limit. A limit
    that cannot bind (at least the session count, or a policy that runs one frame
    at a time) is dropped, like unused policy parameters.
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

    def __post_init__(self) -> None:
        problems = _problems(self)
        if problems:
            raise BadInput(problems)
        # Canonical form: a tuple of floats, parameters the policy does not use dropped.
        object.__setattr__(self, "latency_ms", tuple(float(v) for v in self.latency_ms))
        object.__setattr__(self, "fps", tuple(float(v) for v in self.fps))
        used = POLICIES[self.policy].params
        for name in ("max_batch", "max_queue_delay_us", "slo_ms"):
            if name not in used:
                object.__setattr__(self, name, None)
        limit = self.memory_batch_limit
        if limit is not None and (limit >= self.sessions or POLICIES[self.policy].one_at_a_time):
            object.__setattr__(self, "memory_batch_limit", None)

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
        """A frame's time outside the GPU when nothing waits for a CPU thread:
        ``2 * network_ms + pre_ms + post_ms + overhead_ms`` (SPEC §5.1)."""
        return self.stages.outside_ms(self.overhead_ms)

    @property
    def cpu_pool(self) -> bool:
        """Whether CPU work queues for a finite pool of threads (K >= 1 and a stage > 0)."""
        return self.stages.cpu_pool

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


def scenario_fields() -> tuple[str, ...]:
    return tuple(f.name for f in fields(Scenario))


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
    if table.ndim != 1 or table.size < s.sessions:
        problems.append(
            f"the latency table covers batch 1..{table.size} but {s.sessions} sessions can "
            f"form a batch of {s.sessions}"
        )
    if not (np.all(np.isfinite(table)) and np.all(table > 0)):
        problems.append("every latency in the table must be a finite number above zero")
    elif np.any(np.diff(table) < 0):
        problems.append("latency must not decrease with batch size")
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
    if not isinstance(s.sharing, Sharing):
        problems.append("sharing must be a Sharing value")
    if not problems and s.sharing.mode == "time-slicing":
        problem = cotenant_problem(s.duration_s, s.sharing.cotenants, s.sharing.busy_period_ms)
        if problem:
            problems.append(problem)
    if not problems:
        problem = frames_problem(sum(s.session_fps), s.duration_s)
        if problem:
            problems.append(problem)
    return problems


def frames_problem(total_fps: FramesPerSecond, duration_s: Seconds) -> str | None:
    """Why a run of these sessions (their frame rates added up) is too long, or None."""
    arrivals = total_fps * duration_s
    if arrivals <= MAX_ARRIVALS:
        return None
    return (
        f"the scenario has about {arrivals:,.0f} frames; at most {MAX_ARRIVALS:,} "
        "fit in one run (shorten the duration or lower the frame rates)"
    )


def cotenant_problem(
    duration_s: Seconds, duties: tuple[float, ...], busy_period_ms: Milliseconds
) -> str | None:
    """Why co-tenants this busy for this long would switch too often to draw, or None."""
    # Each co-tenant switches twice per busy-and-idle cycle of busy / duty ms.
    changes = sum(2.0 * duration_s * 1000.0 * duty / busy_period_ms for duty in duties)
    if changes <= MAX_COTENANT_CHANGES:
        return None
    return (
        f"co-tenants would switch about {changes:,.0f} times in this run (at most "
        f"{MAX_COTENANT_CHANGES:,}); lengthen their busy period or shorten the run"
    )
