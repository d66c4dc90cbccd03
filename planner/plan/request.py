"""What a recommendation is asked: what every seat must get (``Criteria``) and everything
the search depends on (``Request``: the fitted curve, candidate policies and sharing modes,
the worker's stages, seeds, duration and the largest count), as frozen, validated values
that build each scenario the search simulates (SPEC §3.5)."""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field, replace
from typing import Any

from planner import limits
from planner.curves.batch_cost import spread_table, with_per_request
from planner.curves.fit import Edge, FittedCurve
from planner.errors import BadInput
from planner.plan.cascade import CascadeStep, memory_note, models, with_cascade_memory
from planner.plan.decoders import Decoders
from planner.sim.calibration import Calibration
from planner.sim.memory import MemoryLimit, available, memory_limit, memory_model
from planner.sim.policies import POLICIES
from planner.sim.scenario import MAX_ARRIVALS, Phases, Scenario, Sharing
from planner.sim.sharing.mps import peak_range
from planner.sim.stages import NO_STAGES, WorkerStages
from planner.units import FramesPerSecond, Milliseconds, UsdPerHour, is_finite

SEARCHES = limits.SEARCHES
"""The cap searches a request can ask for, the default first (``planner.plan.search``)."""


@dataclass(frozen=True)
class Criteria:
    """What a user asks of every seat (SPEC §3.5 defaults)."""

    budget_ms: Milliseconds = limits.DEFAULT_BUDGET_MS
    percentile: float = limits.DEFAULT_PERCENTILE
    min_fps: FramesPerSecond = limits.DEFAULT_MIN_FPS
    max_overwritten: float | None = None
    overhead_ms: Milliseconds = limits.DEFAULT_OVERHEAD_MS

    def __post_init__(self) -> None:
        problems = []
        if not limits.BUDGET_MS.holds(self.budget_ms):
            problems.append(f"the latency budget must be {limits.BUDGET_MS.words()} ms")
        if not limits.PERCENTILE.holds(self.percentile):
            problems.append(f"the percentile must be {limits.PERCENTILE.words()}")
        if not limits.MIN_FPS.holds(self.min_fps):
            problems.append(f"the frame-rate floor must be {limits.MIN_FPS.words()} fps")
        if self.max_overwritten is not None and not limits.MAX_OVERWRITTEN.holds(
            self.max_overwritten
        ):
            problems.append(
                f"the overwritten limit must be a fraction {limits.MAX_OVERWRITTEN.words()}"
            )
        if not limits.OVERHEAD_MS.holds(self.overhead_ms):
            problems.append(f"the overhead must be {limits.OVERHEAD_MS.words()} ms")
        elif is_finite(self.budget_ms):
            # The overhead alone; a request adds its worker's stages to it.
            problem = NO_STAGES.budget_problem(self.overhead_ms, self.budget_ms)
            if problem:
                problems.append(problem)
        if problems:
            raise BadInput(problems)


@dataclass(frozen=True)
class Request:
    """Everything a recommendation depends on; frozen, so it can be cached and linked.

    ``curve`` is the fitted whole-card curve. ``profile_curves`` maps a MIG profile name to
    a curve measured on that profile, used instead of deriving one. ``slo_ms`` fixes the
    objective of the ``aimd`` and ``deadline`` policies; by default it is the budget minus
    the frame's expected time outside the GPU (``non_gpu_ms``). ``price_per_hour`` is the
    card's hourly price, if known. ``other_jobs`` says the rest of the card goes to other
    jobs: a card then holds one instance of our worker, and a seat is charged our fraction
    of the card (otherwise the card's other MIG instances or MPS clients are assumed to run
    the same worker).

    The worker (SPEC §5.1): ``stages``, its network delay each way and CPU work per frame
    before and after the GPU on its CPU threads (``planner.sim.stages``).
    ``max_sessions`` is the largest session count the search considers; unset, it goes
    until the first failure, up to 4,096 (``largest``). ``card_memory_gb`` is the card's
    memory, for the memory check (with the curve's ``memory_mb`` figures).
    ``calibration`` (SPEC §5.2, ``planner.sim.calibration``) is what a load test of a real
    worker added to the curve: every run's batches take its ``a + c*b`` more and every
    frame its ``d`` more overhead. ``search`` is how each option's cap is searched
    (``planner.plan.search``): ``bracketed``, whose work grows about as N log N in the cap,
    or ``exhaustive``, every count from 1 up to the first failure. ``queue`` and its
    settings say what the server keeps of a session's frames (``Scenario.queue``:
    ``newest``, or ``all`` for a server that queues every frame).

    Batch cost (``planner.curves.batch_cost``): ``per_request_ms`` is the curve's cost per
    request of a batch, added to every table as ``b * per_request_ms`` (left out under a
    calibration, whose ``c`` is that cost as a load test measured it); ``spread`` says
    whether batch times spread as the curve's points say (a calibration that fitted a
    spread gives its own instead); off, every batch takes the table's value.

    ``cascade`` is the models the worker runs after the curve's on each batch, in order,
    each on the crops the one before produced (``planner.plan.cascade``; SPEC §6.3);
    ``model_name`` names the curve's model when the answer speaks of the chain.
    ``margin`` is the version of the uncalibrated range's margin (SPEC §6.2,
    ``planner.plan.margin``): without a calibration, each cap's low end also carries the
    model's error measured on published results and load tests. None: no margin, as plans before it.
    ``decoders`` is the decode stage before the CPU's pre stage, read per option for its
    instance (``planner.plan.decoders``); None: none, as plans before it.
    """

    curve: FittedCurve
    criteria: Criteria = field(default_factory=Criteria)
    policies: tuple[str, ...] = tuple(POLICIES)
    sharings: tuple[Sharing, ...] = (Sharing(),)
    seeds: int = limits.DEFAULT_SEEDS
    duration_s: float = limits.DEFAULT_DURATION_S
    max_sessions: int | None = None
    fps: FramesPerSecond = limits.DEFAULT_FPS
    phases: Phases = "random"
    jitter_ms: Milliseconds = 0.0
    max_batch: int | None = None
    max_queue_delay_us: float | None = None
    slo_ms: Milliseconds | None = None
    profile_curves: tuple[tuple[str, FittedCurve], ...] = ()
    peak_sessions: int | None = None
    headroom: float = limits.DEFAULT_HEADROOM
    price_per_hour: UsdPerHour | None = None
    other_jobs: bool = False
    stages: WorkerStages = NO_STAGES
    card_memory_gb: float | None = None
    calibration: Calibration | None = None
    search: str = SEARCHES[0]
    queue: str = "newest"
    max_queue_size: int | None = None
    queue_timeout_us: float | None = None
    timeout_action: str = "reject"
    per_request_ms: Milliseconds = 0.0
    spread: bool = True
    cascade: tuple[CascadeStep, ...] = ()
    model_name: str = "the first model"
    margin: int | None = None
    decoders: Decoders | None = None

    def __post_init__(self) -> None:
        problems = []
        if self.margin is not None and self.margin not in limits.UNCALIBRATED_MARGINS:
            problems.append(
                f"the margin's version must be one of "
                f"{', '.join(map(str, limits.UNCALIBRATED_MARGINS))}"
            )
        if not limits.PER_REQUEST_MS.holds(self.per_request_ms):
            problems.append(f"the per-request cost must be {limits.PER_REQUEST_MS.words()} ms")
        unknown = [p for p in self.policies if p not in POLICIES]
        if unknown or not self.policies:
            problems.append(
                f"policies must be some of {', '.join(POLICIES)}"
                + (f" (not {', '.join(unknown)})" if unknown else "")
            )
        if len(set(self.policies)) != len(self.policies):
            problems.append("a policy is listed twice")
        if not self.sharings:
            problems.append("at least one sharing mode is needed")
        if len(set(self.sharings)) != len(self.sharings):
            problems.append("a sharing mode is listed twice")
        measured = {name for name, _ in self.profile_curves}
        for sharing in self.sharings:
            profile = sharing.kind.profile_used(sharing)
            if profile is not None and profile not in measured:
                problems.append(
                    f"no curve measured on MIG profile {profile} was given; "
                    "derive it from the whole-card curve instead"
                )
        if self.queue not in limits.QUEUES:
            problems.append(f"the queue must be one of {', '.join(limits.QUEUES)}")
        if self.search not in SEARCHES:
            problems.append(f"the search must be one of {', '.join(SEARCHES)}")
        if not (isinstance(self.seeds, int) and limits.SEEDS.holds(self.seeds)):
            problems.append(f"seeds must be {limits.SEEDS.words()}")
        if self.max_sessions is not None and not (
            isinstance(self.max_sessions, int) and limits.MAX_SESSIONS.holds(self.max_sessions)
        ):
            problems.append(f"the largest session count must be {limits.MAX_SESSIONS.words()}")
        if self.peak_sessions is not None and not (
            isinstance(self.peak_sessions, int) and limits.PEAK_SESSIONS.holds(self.peak_sessions)
        ):
            problems.append(f"peak sessions must be {limits.PEAK_SESSIONS.words()}")
        if not limits.HEADROOM.holds(self.headroom):
            problems.append(f"headroom must be a fraction {limits.HEADROOM.words()} (0.2 = 20%)")
        if self.price_per_hour is not None and not limits.PRICE_PER_HOUR.holds(self.price_per_hour):
            problems.append(f"the price must be {limits.PRICE_PER_HOUR.words()} USD per hour")
        if self.card_memory_gb is not None and not (
            is_finite(self.card_memory_gb) and 0 < self.card_memory_gb <= 16_384
        ):
            problems.append("the card's memory must be a positive number of GB")
        if not isinstance(self.stages, WorkerStages):
            problems.append("stages must be a WorkerStages value (planner.sim.stages)")
        elif self.slo_ms is None:
            problem = self.stages.budget_problem(self.overhead_ms, self.criteria.budget_ms)
            if problem:
                problems.append(problem)
        if problems:
            raise BadInput(problems)
        # Scenario validates duration, fps, phases, jitter, stages, policy parameters and
        # how busy the co-tenants are: every sharing mode at the largest count considered.
        for sharing in self.sharings:
            self.scenario("oldest-first", sharing, "central", self.largest, 0, memory=False)

    @property
    def floor_warning(self) -> str | None:
        """A warning when the frame-rate floor asks more than the sources send (None when
        it does not): a session never gets more frames than its source sends, so no
        session count holds."""
        floor = self.criteria.min_fps
        if floor <= self.fps:
            return None
        return (
            f"the frame-rate floor ({floor:g} fps) is above the source frame rate "
            f"({self.fps:g} fps): no session gets more frames than its source sends, so no "
            "session count holds; lower the floor or raise the source frame rate"
        )

    @property
    def largest(self) -> int:
        """The largest session count the search considers: ``max_sessions``, or by default
        up to 4,096 (``planner.limits.MAX_SESSIONS``) as long as a run of that many
        sessions fits in one run (``planner.sim.scenario.MAX_ARRIVALS`` frames)."""
        if self.max_sessions is not None:
            return self.max_sessions
        most = int(limits.MAX_SESSIONS.high)
        arrivals = self.fps * self.duration_s if is_finite(self.duration_s) else math.inf
        fits = MAX_ARRIVALS / arrivals if arrivals > 0 else most
        return max(1, min(most, int(fits) if math.isfinite(fits) else most))

    @property
    def overhead_ms(self) -> Milliseconds:
        """The per-frame overhead the runs add: the criteria's, plus the calibration's
        ``d`` when there is one."""
        overhead = self.criteria.overhead_ms
        return overhead if self.calibration is None else self.calibration.overhead(overhead)

    @property
    def non_gpu_ms(self) -> Milliseconds:
        """A frame's expected time outside the GPU: ``2*network + pre + post + overhead``."""
        return self.stages.outside_ms(self.overhead_ms)

    @property
    def objective_ms(self) -> Milliseconds:
        """The GPU-side objective of ``aimd`` and ``deadline``: the user's ``slo_ms``, else
        the budget less the time outside the GPU. It becomes their policy parameter
        ``slo_ms`` in every run (``Scenario.slo_ms``, ``params[SLO_MS]`` in the kernels,
        ``planner.sim.policies``), the name the interface keeps."""
        if self.slo_ms is not None:
            return self.slo_ms
        return self.criteria.budget_ms - self.non_gpu_ms

    def curve_for(self, sharing: Sharing) -> FittedCurve:
        """The curve a sharing mode runs on: a measured MIG profile's, else the card's."""
        profile = sharing.kind.profile_used(sharing)
        if profile is not None:
            return dict(self.profile_curves)[profile]
        return self.curve

    @property
    def queued_batch(self) -> int:
        """The largest batch of up to ``max_batch`` requests a server that queues every
        frame can form (1 under ``newest``, where no batch exceeds the session count)."""
        if self.queue != "all":
            return 1
        batches = [
            self.max_batch or int(POLICIES[p].defaults["max_batch"])
            for p in self.policies
            if "max_batch" in POLICIES[p].params
        ]
        return max(batches, default=1)

    def table(self, sharing: Sharing, edge: Edge) -> tuple[float, ...]:
        """The latency table a sharing mode's runs take (batch 1, 2, …), as the worker runs
        it: the curve's edge, plus the calibration's ``a + c * b`` or, uncalibrated, the
        curve's per-request cost (``model_table``)."""
        return model_table(
            self.curve_for(sharing), max(64, self.largest, self.queued_batch), edge,
            self.per_request_ms, self.calibration,
        )  # fmt: skip

    def spread_of(self, sharing: Sharing) -> tuple[float, ...]:
        """The batch-time spread of a sharing mode's runs, over the whole table
        (``model_spread``)."""
        return model_spread(
            self.curve_for(sharing), max(64, self.largest, self.queued_batch), self.calibration,
            self.spread,
        )  # fmt: skip

    def memory(self, sharing: Sharing) -> MemoryLimit:
        """The largest batch that fits in the memory ``sharing`` leaves (``planner.sim.memory``)."""
        upto = max(self.largest, self.queued_batch)
        return _memory(self.curve_for(sharing), sharing, self.card_memory_gb, upto, self.cascade)

    def scenario(
        self,
        policy: str,
        sharing: Sharing,
        edge: Edge,
        sessions: int,
        seed: int,
        *,
        memory: bool = True,
        cpu: bool = True,
    ) -> Scenario:
        """One run of an option. ``memory=False`` lifts the memory limit on the batch and
        ``cpu=False`` makes the CPU threads unlimited (to tell whether they bind)."""
        limit = self.memory(sharing).batch_limit if memory else None
        if limit == 0:
            raise BadInput(f"{sharing.label}: {self.memory(sharing).needs(1)}; no batch fits")
        return run_scenario(
            self.curve_for(sharing),
            edge,
            policy,
            sessions,
            sharing,
            upto=max(64, self.largest, self.queued_batch),
            per_request_ms=self.per_request_ms,
            calibration=self.calibration,
            spread=self.spread,
            memory_batch_limit=limit,
            overhead_ms=self.criteria.overhead_ms,
            fps=(self.fps,),
            duration_s=self.duration_s,
            phases=self.phases,
            seed=seed,
            jitter_ms=self.jitter_ms,
            max_batch=self.max_batch,
            max_queue_delay_us=self.max_queue_delay_us,
            slo_ms=self.objective_ms,
            stages=self.stages if cpu else replace(self.stages, cpu_workers=0),
            queue=self.queue,
            max_queue_size=self.max_queue_size,
            queue_timeout_us=self.queue_timeout_us,
            timeout_action=self.timeout_action,
            cascade=models(self.cascade, edge),
            decode=None if self.decoders is None else self.decoders.decoding(sharing),
        )

    def peak_upto(self, sharing: Sharing) -> int:
        """The batch sizes over which the card's best throughput is taken under the MPS
        and derived MIG models (``planner.sim.sharing.mps.peak_range``)."""
        return peak_range(max(p.batch for p in self.curve_for(sharing).points))


def run_scenario(
    curve: FittedCurve,
    edge: Edge,
    policy: str,
    sessions: int,
    sharing: Sharing,
    *,
    upto: int,
    per_request_ms: Milliseconds,
    calibration: Calibration | None,
    spread: bool,
    memory_batch_limit: int | None,
    overhead_ms: Milliseconds,
    **settings: Any,
) -> Scenario:
    """The one place a run of a plan or a simulation becomes a ``Scenario``: ``policy`` at
    ``sessions`` under ``sharing`` on one edge of ``curve``, with the calibration's (or
    else the curve's per-request) batch cost and overhead applied (``model_table``,
    ``model_spread``, ``Calibration.overhead``); ``settings`` are the scenario's other
    fields as given (frame rate, duration, the policy's parameters, stages, queue).
    ``sharing`` runs as that edge takes it (``SharingMode.at_edge``).

    The table is computed over batch 1..``upto`` (one cached table serves every count of
    a search) and kept up to the batches the run can use and those its card's peak is
    taken over, so the plan's runs and the Simulate page's replay of one of them are the
    same scenario."""
    peak = peak_range(max(p.batch for p in curve.points))
    queued = 1
    if settings.get("queue") == "all" and "max_batch" in POLICIES[policy].params:
        queued = int(settings.get("max_batch") or POLICIES[policy].defaults["max_batch"])
    cover = max(peak, sessions, queued)
    upto = max(upto, cover)
    if calibration is not None:
        overhead_ms = calibration.overhead(overhead_ms)
    # What of the sharing follows the card's speed takes the edge's (co-tenants by
    # workload: their batch time on the same edge of their own curve's band).
    sharing = sharing.kind.at_edge(sharing, edge)
    return Scenario(
        latency_ms=model_table(curve, upto, edge, per_request_ms, calibration)[:cover],
        spread=model_spread(curve, upto, calibration, spread)[:cover],
        sessions=sessions,
        policy=policy,
        sharing=sharing,
        memory_batch_limit=memory_batch_limit,
        peak_upto=peak,
        overhead_ms=overhead_ms,
        **settings,
    )


@functools.lru_cache(maxsize=512)
def _memory(
    curve: FittedCurve,
    sharing: Sharing,
    card_memory_gb: float | None,
    upto: int,
    cascade: tuple[CascadeStep, ...] = (),
) -> MemoryLimit:
    """The memory limit of a curve under a sharing mode, every later model of a cascade
    added (cached: asked for every run)."""
    model, note = with_cascade_memory(memory_model(curve.points), cascade)
    return memory_note(memory_limit(model, available(sharing, card_memory_gb), upto), note)


def model_table(
    curve: FittedCurve,
    upto: int,
    edge: Edge,
    per_request_ms: Milliseconds,
    calibration: Calibration | None,
) -> tuple[float, ...]:
    """The one table a run of a plan or a simulation takes from a curve: batch 1..upto on
    one edge, with the calibration's ``a + c * b`` added, or without one the curve's
    per-request cost ``b * per_request_ms`` (the calibration's ``c`` is that cost as a
    load test measured it, so the two are never added together).

    Uncalibrated, the per-request cost is added on the central and pessimistic edges
    only. It is the gap between a server's two sweeps (b requests at once against one
    request of b frames), timed at the client: it holds the client's sending and the
    server's handling of each request, and how much of that lies on a batch's path (rather
    than overlapping the batch before it, as it can when requests arrive spread over
    time) only a load test tells. So the optimistic edge, the range's high end, takes
    none of it on the path; a calibration's ``c`` settles it (``docs/design.md``, the
    per-request cost)."""
    table = _table(curve, upto, edge)
    if calibration is not None:
        return calibration.table(table)
    if edge == "optimistic":
        return table
    return _per_request(table, per_request_ms) if per_request_ms else table


def model_spread(
    curve: FittedCurve, upto: int, calibration: Calibration | None, on: bool = True
) -> tuple[float, ...]:
    """The batch-time spread for batch 1..upto (``planner.sim.batch_time``): the
    calibration's when it fitted one (it measured the worker's batches), else the
    curve's points' (``planner.curves.batch_cost.spread_table``); ``()`` when ``on`` is
    false or neither has any."""
    if not on:
        return ()
    if calibration is not None and calibration.spread_sigma is not None:
        return calibration.spread(upto)
    return spread_table(curve.points, upto)


@functools.lru_cache(maxsize=512)
def _per_request(table: tuple[float, ...], per_request_ms: float) -> tuple[float, ...]:
    return with_per_request(table, per_request_ms)


@functools.lru_cache(maxsize=512)
def _table(curve: FittedCurve, upto: int, edge: Edge) -> tuple[float, ...]:
    """Latency for batch 1..upto on one edge of a fitted curve (cached: a search builds
    thousands of scenarios from a handful of tables)."""
    return tuple(float(v) for v in curve.table(upto, edge))
