"""The table of every page parameter, and the base of the parameter sets that pick from it.

One table (``PARAMETERS``) defines each parameter once: its default, its codec and what it
means, so a name means the same on every page. A parameter set (``ParameterSet``) is a
frozen dataclass whose fields are declared with ``param(name)``; it is validated on
construction against the codecs and its own cross-field rules (``conflicts``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar

from planner import limits
from planner.demand.profiles import LEAD_TIME_MIN, PROFILE_NAME
from planner.errors import BadInput
from planner.links.codecs import (
    CURVE_ID,
    MIG_PROFILE,
    Bool,
    Cascade,
    Choice,
    Codec,
    CotenantCurves,
    Float,
    Int,
    Maybe,
    NoneOr,
    Numbers,
    Pattern,
    Points,
    Precision,
    Resolution,
    Subset,
    Text,
    Texts,
)
from planner.sim.decode import CODECS, DEFAULT_CODEC, MAX_ENGINES
from planner.sim.policies import POLICIES, POLICY_NAMES
from planner.sim.scenario import (
    MODES,
    PHASES,
    Scenario,
    Sharing,
)
from planner.sim.sharing.mig import ALL_PROFILES
from planner.sim.stages import WorkerStages

MIG_PROFILE_OR_ALL = re.compile(rf"^({ALL_PROFILES}|{MIG_PROFILE.pattern[1:-1]})$")
"""A MIG profile such as ``3g.40gb``, or ``all`` for every profile of the card."""
DEFAULT_POLICIES: tuple[str, ...] = tuple(POLICIES)
"""The names of the scheduling policies registered when the links load, in the order the
recommendation lists them: the ``policies`` parameter's default. The policies themselves
are ``planner.sim.policies.POLICIES``; the codecs read that registry (``POLICY_NAMES``), so
a policy registered later is accepted too."""

# ---------------------------------------------------------------------------------------
# The parameters. One table defines each parameter once (default, codec, meaning); the
# parameter sets below pick their fields from it, so a name means the same on every page.


@dataclass(frozen=True)
class Parameter:
    """One link parameter: its default, its codec and what it means."""

    default: Any
    codec: Codec[Any]
    doc: str


PARAMETERS: dict[str, Parameter] = {
    # The curve: a stored curve's id, or embedded points with the labels describing them.
    "curve": Parameter(
        None, Maybe(Pattern(CURVE_ID, "a 12-character curve id")), "stored curve id"
    ),
    "points": Parameter(None, Maybe(Points()), "embedded points, batch:latency_ms (ms per call)"),
    "model": Parameter(None, Maybe(Text("model")), "model name"),
    "card": Parameter(None, Maybe(Text("card")), "card name"),
    "precision": Parameter(None, Maybe(Precision()), "precision of the curve"),
    "resolution": Parameter(None, Maybe(Resolution()), "input resolution of the curve"),
    # A calibration of the curve from a load test (SPEC §5.2), pinned by id; absent: none.
    "calibration": Parameter(
        None,
        NoneOr(Pattern(CURVE_ID, "a 12-character calibration id, or none")),
        "calibration of the curve by a load test (unset: none)",
    ),
    # The criteria of a plan: ranges from ``planner.limits``, defaults from the library's
    # own dataclasses, so a link carries exactly what the library accepts.
    "budget_ms": Parameter(
        limits.DEFAULT_BUDGET_MS, Float.of(limits.BUDGET_MS), "latency budget, ms end-to-end"
    ),
    "percentile": Parameter(
        limits.DEFAULT_PERCENTILE, Float.of(limits.PERCENTILE), "percentile the budget applies to"
    ),
    "min_fps": Parameter(
        limits.DEFAULT_MIN_FPS,
        Float.of(limits.MIN_FPS),
        "frame-rate floor of the slowest session, fps",
    ),
    "source_fps": Parameter(
        limits.DEFAULT_FPS,
        Float.of(limits.FPS),
        "frames per second every source sends",
    ),
    "max_overwritten": Parameter(
        None,
        Maybe(Float.of(limits.MAX_OVERWRITTEN)),
        "largest overwritten fraction allowed",
    ),
    "overhead_ms": Parameter(
        limits.DEFAULT_OVERHEAD_MS,
        Float.of(limits.OVERHEAD_MS),
        "per-frame overhead outside the GPU, ms",
    ),
    "policies": Parameter(DEFAULT_POLICIES, Subset(POLICY_NAMES), "candidate scheduling policies"),
    "modes": Parameter(
        None, Maybe(Subset(MODES)), "candidate sharing modes (unset: from the mode parameters)"
    ),
    # Sharing modes.
    "cotenants": Parameter(
        (),
        Numbers(Float.of(limits.DUTY), 0, int(limits.COTENANTS.high)),
        "duty cycles of co-tenant jobs, 0-1",
    ),
    # Co-tenants by workload (SPEC §6.3): a stored curve, a batch and a rate each.
    "cotenant_curve": Parameter(
        (),
        CotenantCurves(int(limits.COTENANTS.high)),
        "time-slicing: co-tenants given by what they run, their stored curves or points",
    ),
    "cotenant_batch": Parameter(
        (),
        Numbers(Int.of(limits.MAX_BATCH), 0, int(limits.COTENANTS.high)),
        "time-slicing: each co-tenant by workload's batch",
    ),
    "cotenant_rps": Parameter(
        (),
        Numbers(Float(0, 1_000_000, above_low=True), 0, int(limits.COTENANTS.high)),
        "time-slicing: each co-tenant by workload's request rate, frames per second",
    ),
    "busy_period_ms": Parameter(
        limits.DEFAULT_BUSY_PERIOD_MS,
        Float.of(limits.BUSY_PERIOD_MS),
        "mean co-tenant busy period, ms",
    ),
    "mps_share": Parameter(
        None, Maybe(Float.of(limits.MPS_SHARE)), "MPS compute share, percent (unset: 50)"
    ),
    "mig_profile": Parameter(
        None,
        Maybe(Pattern(MIG_PROFILE_OR_ALL, f"3g.40gb, or {ALL_PROFILES} for every profile")),
        f"MIG profile ({ALL_PROFILES}: every profile of the card, in one plan)",
    ),
    # Memory (SPEC §5.1): what the co-tenants take, an MPS client's limit.
    "cotenant_memory_mb": Parameter(
        (),
        Numbers(Float.of(limits.MEMORY_MB), 0, int(limits.COTENANTS.high)),
        "GPU memory each co-tenant declares, MB (one for all or one per co-tenant)",
    ),
    "mps_memory_mb": Parameter(
        None,
        Maybe(Float(0, limits.MEMORY_MB.high, above_low=True)),
        "MPS client memory limit, MB",
    ),
    # The worker beyond the GPU (SPEC §5.1).
    "network_ms": Parameter(
        WorkerStages.network_ms, Float.of(limits.STAGE_MS), "one-way network delay, ms"
    ),
    "pre_ms": Parameter(
        WorkerStages.pre_ms, Float.of(limits.STAGE_MS), "CPU work per frame before the GPU, ms"
    ),
    "post_ms": Parameter(
        WorkerStages.post_ms, Float.of(limits.STAGE_MS), "CPU work per frame after the GPU, ms"
    ),
    "cpu_workers": Parameter(
        WorkerStages.cpu_workers,
        Int.of(limits.CPU_WORKERS),
        "CPU threads for that work (0 = unlimited)",
    ),
    # The decode stage (SPEC §6.3): none unless a decode time is given.
    "decode_ms": Parameter(
        None,
        Maybe(Float(0, limits.STAGE_MS.high, above_low=True)),
        "video decoder time per frame on one engine, ms (unset: no decode stage)",
    ),
    "decoders": Parameter(
        None,
        Maybe(Int(0, MAX_ENGINES)),
        "video decoder engines (unset: the card's or MIG profile's, from the catalogue)",
    ),
    "codec": Parameter(DEFAULT_CODEC, Choice(CODECS), "the streams' codec: h264, h265 or jpeg"),
    "cpu_decode_ms": Parameter(
        None,
        Maybe(Float(0, limits.STAGE_MS.high, above_low=True)),
        "CPU time to decode a frame, ms, where there is no decoder engine",
    ),
    # A cascade (SPEC §6.3): the models the worker runs after the curve's on each batch.
    "cascade": Parameter(
        (),
        Cascade(),
        "models run after the curve's on each batch, in order: ID:CROPS[:max=B] separated "
        "by ';', CROPS crops per input (K, poisson=MEAN or hist=COUNT:SHARE,...)",
    ),
    # What the server keeps of a session's frames (``Scenario.queue``), and Triton's
    # default_queue_policy for a server that queues every frame.
    "queue": Parameter(
        Scenario.queue,
        Choice(limits.QUEUES),
        "frames the server keeps: newest (one per session, older overwritten) or all "
        "(every frame queued, as Triton and KServe servers do)",
    ),
    "max_queue_size": Parameter(
        None,
        Maybe(Int.of(limits.MAX_QUEUE_SIZE)),
        "queue all: requests waiting at most; a request that finds it full is rejected "
        "(unset: no bound)",
    ),
    "queue_timeout_us": Parameter(
        None,
        Maybe(Float.of(limits.QUEUE_TIMEOUT_US)),
        "queue all: how long a request may wait before the timeout action applies, us "
        "(unset: no timeout)",
    ),
    "timeout_action": Parameter(
        Scenario.timeout_action,
        Choice(limits.TIMEOUT_ACTIONS),
        "queue all: reject a timed-out request, or delay it behind the others",
    ),
    # The uncalibrated range's margin (SPEC §6.2), pinned by version; absent: none, so a
    # link from before it reopens with the same range.
    "margin": Parameter(
        None,
        NoneOr(Int.of(limits.MARGIN_VERSION)),
        "version of the uncalibrated range's margin, the model's error on published "
        "results (unset or none: no margin)",
    ),
    "spread": Parameter(
        True,
        Bool(),
        "batch times spread as the curve's measured p10/p90 (or std) say, or as a "
        "calibration fitted (0: every batch takes the curve's median)",
    ),
    # How hard the search looks.
    "seeds": Parameter(limits.DEFAULT_SEEDS, Int.of(limits.SEEDS), "phase seeds per scenario"),
    "duration_s": Parameter(
        limits.DEFAULT_DURATION_S, Float.of(limits.DURATION_S), "simulated seconds per run"
    ),
    "max_sessions": Parameter(
        None,
        Maybe(Int.of(limits.MAX_SESSIONS)),
        f"largest session count considered (unset: until the first failure, up to "
        f"{int(limits.MAX_SESSIONS.high):,})",
    ),
    "search": Parameter(
        limits.SEARCHES[0],
        Choice(limits.SEARCHES),
        "cap search: bracketed (work about N log N in the cap) or exhaustive (every count)",
    ),
    # Fleet and cost.
    "peak_sessions": Parameter(
        None, Maybe(Int.of(limits.PEAK_SESSIONS)), "peak concurrent sessions"
    ),
    "headroom": Parameter(
        limits.DEFAULT_HEADROOM, Float.of(limits.HEADROOM), "fleet headroom fraction (0.2 = 20%)"
    ),
    "price_per_hour": Parameter(
        None, Maybe(Float.of(limits.PRICE_PER_HOUR)), "hourly price of the card, USD"
    ),
    "other_jobs": Parameter(
        False,
        Bool(),
        "the rest of the card goes to other jobs: one instance per card, charged our part",
    ),
    # One simulated scenario.
    "sessions": Parameter(3, Int.of(limits.SESSIONS), "concurrent sessions"),
    "policy": Parameter("batch-all", Choice(POLICY_NAMES), "scheduling policy"),
    "max_batch": Parameter(
        None, Maybe(Int.of(limits.MAX_BATCH)), "largest batch (max-batch, triton)"
    ),
    "max_queue_delay_us": Parameter(
        None,
        Maybe(Float.of(limits.MAX_QUEUE_DELAY_US)),
        "longest wait for a fuller batch (triton), us",
    ),
    "slo_ms": Parameter(None, Maybe(Float.of(limits.SLO_MS)), "objective of aimd and deadline, ms"),
    "compare_policy": Parameter(None, Maybe(Choice(POLICY_NAMES)), "second policy, side by side"),
    "fps": Parameter(
        Scenario.fps,
        Numbers(Float.of(limits.FPS), 1, int(limits.SESSIONS.high)),
        "fps, one or one per session",
    ),
    "phases": Parameter(Scenario.phases, Choice(PHASES), "phase model of the arrivals"),
    "seed": Parameter(Scenario.seed, Int.of(limits.SEED), "random seed of the scenario"),
    "jitter_ms": Parameter(
        Scenario.jitter_ms, Float.of(limits.JITTER_MS), "arrival jitter (standard deviation), ms"
    ),
    "mode": Parameter(Sharing.mode, Choice(MODES), "sharing mode"),
    # Comparing cards.
    "cards": Parameter((), Texts(Text("card", commas=False), 16), "cards (unset: all)"),
    # Browsing a study.
    "study": Parameter(None, Maybe(Text("study")), "stored study (unset: the newest)"),
    "metric": Parameter(
        "seats_per_card",
        Choice(("seats_per_card", "cost_per_seat_hour", "cost_per_day", "day_gpu_hours")),
        "figure shown per cell",
    ),
    "x_axis": Parameter(None, Maybe(Text("axis", commas=False)), "study axis across"),
    "y_axis": Parameter(None, Maybe(Text("axis", commas=False)), "study axis down"),
    "hold": Parameter(
        (), Texts(Text("axis value", commas=False), 64), "other axes held at AXIS=VALUE"
    ),
    # Demand over time (``planner.demand.profiles``).
    "profile": Parameter(
        None,
        Maybe(Pattern(PROFILE_NAME, "office-hours")),
        "demand profile: a built-in shape (flat, office-hours, evening-peak) or a stored one",
    ),
    "lead_time_min": Parameter(
        LEAD_TIME_MIN,
        Float.of(limits.LEAD_TIME_MIN),
        "autoscaling lead time: minutes from asking for a GPU to it serving",
    ),
    # Which curves are offered.
    "flagged": Parameter(
        False,
        Bool(),
        "include curves whose measurement was flagged (a failed drift check); they are left "
        "out of comparisons and of the curve choices otherwise",
    ),
}

_CURVE_LABEL_FIELDS = ("model", "card", "precision", "resolution")


def param(name: str) -> Any:
    """The dataclass field of the link parameter ``name`` (see ``PARAMETERS``)."""
    spec = PARAMETERS[name]
    return field(default=spec.default, metadata={"parameter": name})


class ParameterSet:
    """Base of the parameter sets: validation on construction, and the page they open."""

    page_path: ClassVar[str]
    """The dashboard page a link opens: ``""`` for the landing page, served at ``/``."""
    views: ClassVar[frozenset[str]] = frozenset()
    """Query parameters of the page's view that are not part of the parameters (what a
    page shows beside them, such as a saved plan to compare with): ``decode`` leaves them
    to the page, and saved plans do not store them."""

    def __post_init__(self) -> None:
        problems: list[str] = []
        for name, parameter in schema(type(self)).items():
            try:
                value = parameter.codec.check(getattr(self, name))
            except BadInput as exc:
                problems.extend(f"{name}: {p}" for p in exc.problems)
            else:
                object.__setattr__(self, name, value)
        if problems:
            raise BadInput(problems)
        conflicts = [message for _, message in self.conflicts(self.__dict__)]
        if conflicts:
            raise BadInput(conflicts)

    @classmethod
    def conflicts(cls, values: Mapping[str, Any]) -> list[tuple[tuple[str, ...], str]]:
        """Combinations of valid values that do not go together.

        Each conflict names the fields that ``decode`` resets to settle it, and says why.
        """
        return curve_conflicts(values)


def curve_conflicts(values: Mapping[str, Any]) -> list[tuple[tuple[str, ...], str]]:
    out: list[tuple[tuple[str, ...], str]] = []
    if values.get("curve") is not None and values.get("points") is not None:
        out.append((("curve",), "curve and points were both given; the points are used"))
    if values.get("points") is None:
        labels = tuple(n for n in _CURVE_LABEL_FIELDS if values.get(n) is not None)
        if labels:
            out.append((labels, f"{', '.join(labels)} only describe embedded points"))
    return out


def schema(cls: type[ParameterSet]) -> dict[str, Parameter]:
    """The parameters of a parameter set, by name, in the order links write them."""
    out = {}
    for spec in fields(cls):  # type: ignore[arg-type]
        name = spec.metadata["parameter"]
        if name != spec.name:  # pragma: no cover - a typo in a class body
            raise TypeError(f"{cls.__name__}.{spec.name} is declared as param({name!r})")
        out[name] = PARAMETERS[name]
    return out
