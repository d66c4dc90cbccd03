"""The parameters of each page as frozen, validated values: a plan (``PlanParams``: the Plan
page, a link, ``planner recommend``), one simulation (``SimulateParams``) and a card
comparison (``CompareParams``), with the rules that say which values go together.

Their fields come from the one parameter table (``planner.links.parameters``), so a plan
is encoded into a link, saved and decoded again unchanged. The worker's stages are four
flat link parameters there (``network_ms=2``); ``stages`` builds the one value the library
takes from them (``planner.sim.stages``), and ``stage_params`` turns it back into them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, ClassVar

from planner import limits
from planner.curves.curve import (
    Point,
)
from planner.links.parameters import PARAMETERS, ParameterSet, curve_conflicts, param
from planner.plan.cotenants import workload_conflicts
from planner.plan.request import Request
from planner.sim.decode import DEFAULT_CODEC, VIDEO_CODECS
from planner.sim.scenario import frames_problem
from planner.sim.sharing import SHARING_MODES, Choice, Sharing, default_modes
from planner.sim.stages import STAGE_FIELDS, WorkerStages
from planner.units import FramesPerSecond, Microseconds, Milliseconds, Seconds, UsdPerHour


def stages_of(values: Mapping[str, Any]) -> WorkerStages:
    """The worker's stages from a parameter set's values (checked ones: the link codecs
    take the same ranges), the stages' defaults where a value is missing."""
    return WorkerStages(**{name: values[name] for name in STAGE_FIELDS if name in values})


def stage_params(stages: WorkerStages) -> dict[str, Any]:
    """The four link parameters of ``stages`` (the inverse of ``stages_of``): the stages'
    fields are named like their link parameters."""
    return asdict(stages)


def _budget_conflicts(values: Mapping[str, Any]) -> list[tuple[tuple[str, ...], str]]:
    """The time outside the GPU that leaves nothing of the budget (the rule is the
    stages', ``WorkerStages.budget_problem``); a link resets the parts that take time."""
    overhead = values.get("overhead_ms", limits.DEFAULT_OVERHEAD_MS)
    budget = values.get("budget_ms", limits.DEFAULT_BUDGET_MS)
    problem = stages_of(values).budget_problem(overhead, budget)
    if problem is None:
        return []
    parts = ("overhead_ms", *(name for name in STAGE_FIELDS if name != "cpu_workers"))
    return [(tuple(n for n in parts if values.get(n)) or ("overhead_ms",), problem)]


def _mode_conflicts(
    values: Mapping[str, Any], modes: Sequence[str], field_name: str
) -> list[tuple[tuple[str, ...], str]]:
    """A sharing mode without what it needs (the first such), else what its parameters
    do not go together with (co-tenants too busy to draw), in the registry's order.
    ``modes`` empty under ``modes`` means the plan's default modes; a name that is not
    registered is the codec's to report."""
    choice = Choice.of(values)
    if field_name == "modes" and not modes:
        modes = default_modes(choice)
    kinds = [kind for name, kind in SHARING_MODES.items() if name in modes]
    lacking = [text for text in (k.lacks(choice) for k in kinds) if text]
    if lacking:
        return [((field_name,), lacking[0])]
    duration = values.get("duration_s", 30.0)
    return [c for k in kinds for c in k.conflicts(choice, duration)]


QUEUE_SETTINGS = ("max_queue_size", "queue_timeout_us", "timeout_action")
"""The settings of a server that queues every frame (``queue = all``)."""


def link_spelling(name: str, value: object = None) -> str:
    """A parameter, or a parameter and its value, as a link writes it: ``queue=all``."""
    return name if value is None else f"{name}={value}"


def queue_conflicts(
    values: Mapping[str, Any], spell: Callable[[str, object], str] = link_spelling
) -> list[tuple[tuple[str, ...], str]]:
    """Queue settings without ``queue = all``, and ``queue = all`` with CPU threads that
    the model does not take with it (``Scenario.queue``). ``spell(name, value)`` writes a
    parameter the way the user gave it (``link_spelling``; the command line's flags)."""
    out: list[tuple[tuple[str, ...], str]] = []
    queue = values.get("queue", "newest")
    if queue != "all":
        given = [n for n in QUEUE_SETTINGS if values.get(n) not in (None, PARAMETERS[n].default)]
        if given:
            verb = "applies" if len(given) == 1 else "apply"
            out.append(
                (
                    tuple(given),
                    f"{', '.join(spell(n, None) for n in given)} {verb} to "
                    f"{spell('queue', 'all')} only; the queue is {queue}",
                )
            )
    elif stages_of(values).cpu_pool:
        out.append(
            (
                ("cpu_workers",),
                f"{spell('queue', 'all')} is modelled with unlimited CPU threads only "
                f"({spell('cpu_workers', 0)})",
            )
        )
    elif values.get("timeout_action", "reject") != "reject" and not values.get("queue_timeout_us"):
        out.append(
            (
                ("timeout_action",),
                f"{spell('timeout_action', None)} needs {spell('queue_timeout_us', None)}",
            )
        )
    return out


def _memory_conflicts(values: Mapping[str, Any]) -> list[tuple[tuple[str, ...], str]]:
    memory = values.get("cotenant_memory_mb") or ()
    cotenants = values.get("cotenants") or ()
    if memory and len(memory) not in (1, len(cotenants)):
        return [
            (
                ("cotenant_memory_mb",),
                f"cotenant_memory_mb has {len(memory)} values for {len(cotenants)} co-tenants "
                "(needs one for all or one per co-tenant)",
            )
        ]
    return []


@dataclass(frozen=True)
class PlanParams(ParameterSet):
    """Everything the Plan page (and ``planner recommend``) takes.

    The curve is a stored curve's id (``curve``), or for a self-contained link its points
    with the labels that describe them (``points``, ``model``, ``card``, ``precision``,
    ``resolution``); with neither, the page picks its default curve. ``modes`` None means
    the recommendation's default: exclusive, plus each mode whose parameters are given.
    ``profile`` names a demand profile (a built-in shape or a stored one) and
    ``lead_time_min`` the autoscaling lead time for the fleet over a day. ``max_batch``
    and ``max_queue_delay_us`` are the batcher settings of the policies that take them
    (``max-batch``, ``triton``), as for one simulation; unset, a plan takes those of the
    server its curve was measured on (``Curve.batcher``), else each policy's own (max-batch
    4, triton 8 and 2,000 µs), which every plan used before they were parameters. The page's view
    settings beside them (``views``) are the saved plan it is compared with and the option
    whose deployment settings it shows.
    """

    page_path: ClassVar[str] = ""
    views: ClassVar[frozenset[str]] = frozenset({"compare_plan", "deploy_option"})

    @classmethod
    def conflicts(cls, values: Mapping[str, Any]) -> list[tuple[tuple[str, ...], str]]:
        out = curve_conflicts(values) + _budget_conflicts(values)
        modes = values.get("modes")
        out += _mode_conflicts(values, modes or (), "modes")
        out += _memory_conflicts(values) + queue_conflicts(values) + workload_conflicts(values)
        out += decoder_conflicts(values)
        duration = values.get("duration_s", 30.0)
        sessions = values.get("max_sessions")
        too_long = sessions is not None and frames_problem(
            sessions * values.get("source_fps", Request.fps), duration
        )
        if too_long:
            out.append((("duration_s", "source_fps"), f"at {sessions} sessions {too_long}"))
        return out

    curve: str | None = param("curve")
    points: tuple[Point, ...] | None = param("points")
    model: str | None = param("model")
    card: str | None = param("card")
    precision: str | None = param("precision")
    resolution: str | None = param("resolution")
    budget_ms: Milliseconds = param("budget_ms")
    percentile: float = param("percentile")
    min_fps: FramesPerSecond = param("min_fps")
    source_fps: FramesPerSecond = param("source_fps")
    max_overwritten: float | None = param("max_overwritten")
    overhead_ms: Milliseconds = param("overhead_ms")
    policies: tuple[str, ...] = param("policies")
    max_batch: int | None = param("max_batch")
    max_queue_delay_us: Microseconds | None = param("max_queue_delay_us")
    modes: tuple[str, ...] | None = param("modes")
    cotenants: tuple[float, ...] = param("cotenants")
    busy_period_ms: Milliseconds = param("busy_period_ms")
    mps_share: float | None = param("mps_share")
    mig_profile: str | None = param("mig_profile")
    seeds: int = param("seeds")
    duration_s: Seconds = param("duration_s")
    max_sessions: int | None = param("max_sessions")
    search: str = param("search")
    peak_sessions: int | None = param("peak_sessions")
    headroom: float = param("headroom")
    price_per_hour: UsdPerHour | None = param("price_per_hour")
    other_jobs: bool = param("other_jobs")
    # Demand over time (SPEC §5.3): the fleet over a day for the recommended option.
    profile: str | None = param("profile")
    lead_time_min: float = param("lead_time_min")
    network_ms: Milliseconds = param("network_ms")
    pre_ms: Milliseconds = param("pre_ms")
    post_ms: Milliseconds = param("post_ms")
    cpu_workers: int = param("cpu_workers")
    queue: str = param("queue")
    max_queue_size: int | None = param("max_queue_size")
    queue_timeout_us: Microseconds | None = param("queue_timeout_us")
    timeout_action: str = param("timeout_action")
    cotenant_memory_mb: tuple[float, ...] = param("cotenant_memory_mb")
    mps_memory_mb: float | None = param("mps_memory_mb")
    flagged: bool = param("flagged")
    calibration: str | None = param("calibration")
    spread: bool = param("spread")
    cascade: tuple[str, ...] = param("cascade")
    cotenant_curve: tuple[str, ...] = param("cotenant_curve")
    cotenant_batch: tuple[float, ...] = param("cotenant_batch")
    cotenant_rps: tuple[float, ...] = param("cotenant_rps")
    margin: int | None = param("margin")
    decode_ms: Milliseconds | None = param("decode_ms")
    decoders: int | None = param("decoders")
    codec: str = param("codec")
    cpu_decode_ms: Milliseconds | None = param("cpu_decode_ms")

    @property
    def stages(self) -> WorkerStages:
        """The worker's stages (SPEC §5.1) as the one value the library takes."""
        return stages_of(self.__dict__)


def decoder_conflicts(values: Mapping[str, Any]) -> list[tuple[tuple[str, ...], str]]:
    """A decoder count without the time it needs (SPEC §6.3): engines need ``decode_ms``,
    none (decoding on the CPU) needs ``cpu_decode_ms``; and a video stream decoded on a
    finite pool of CPU threads, which is not modelled (``planner.sim.decode``)."""
    out: list[tuple[tuple[str, ...], str]] = []
    codec = values.get("codec") or DEFAULT_CODEC
    if (
        values.get("cpu_decode_ms") is not None
        and (values.get("cpu_workers") or 0) > 0
        and codec in VIDEO_CODECS
    ):
        out.append(
            (
                ("cpu_decode_ms", "cpu_workers"),
                f"cpu_decode_ms: decoding every frame of a {codec} stream on a finite pool of "
                "CPU threads is not modelled: set cpu_workers to 0 or use codec jpeg",
            )
        )
    decoders = values.get("decoders")
    if decoders is None:
        return out
    if decoders > 0 and values.get("decode_ms") is None:
        out.append((("decoders", "decode_ms"), "decoders: a decoder count needs decode_ms, "
                    "each decoder's time per frame"))  # fmt: skip
    if decoders == 0 and values.get("cpu_decode_ms") is None:
        out.append((("decoders", "cpu_decode_ms"), "decoders: 0 decoders (decoding on the CPU) "
                    "needs cpu_decode_ms, the CPU's time per frame"))  # fmt: skip
    return out


@dataclass(frozen=True)
class SimulateParams(ParameterSet):
    """Everything the Simulate page (and ``planner simulate``) takes: one scenario.

    ``max_batch``, ``max_queue_delay_us`` and ``slo_ms`` left unset mean the policy's own
    defaults. ``compare_policy`` is a second policy shown side by side on the same
    scenario. ``fps`` has one value for every session or one per session. ``budget_ms``
    (at ``percentile``) and ``min_fps`` are a plan's criteria, drawn on the charts to judge
    the run by; they change nothing simulated. ``calibration`` pins a calibration of the
    curve by id, as a plan does (SPEC §5.2): unset, the run is the model's, uncalibrated,
    which is what every link without it has always meant.
    """

    page_path: ClassVar[str] = "simulate"

    curve: str | None = param("curve")
    points: tuple[Point, ...] | None = param("points")
    model: str | None = param("model")
    card: str | None = param("card")
    precision: str | None = param("precision")
    resolution: str | None = param("resolution")
    sessions: int = param("sessions")
    policy: str = param("policy")
    max_batch: int | None = param("max_batch")
    max_queue_delay_us: Microseconds | None = param("max_queue_delay_us")
    slo_ms: Milliseconds | None = param("slo_ms")
    compare_policy: str | None = param("compare_policy")
    fps: tuple[float, ...] = param("fps")
    duration_s: Seconds = param("duration_s")
    phases: str = param("phases")
    seed: int = param("seed")
    jitter_ms: Milliseconds = param("jitter_ms")
    overhead_ms: Milliseconds = param("overhead_ms")
    mode: str = param("mode")
    cotenants: tuple[float, ...] = param("cotenants")
    busy_period_ms: Milliseconds = param("busy_period_ms")
    mps_share: float | None = param("mps_share")
    mig_profile: str | None = param("mig_profile")
    network_ms: Milliseconds = param("network_ms")
    pre_ms: Milliseconds = param("pre_ms")
    post_ms: Milliseconds = param("post_ms")
    cpu_workers: int = param("cpu_workers")
    queue: str = param("queue")
    max_queue_size: int | None = param("max_queue_size")
    queue_timeout_us: Microseconds | None = param("queue_timeout_us")
    timeout_action: str = param("timeout_action")
    cotenant_memory_mb: tuple[float, ...] = param("cotenant_memory_mb")
    mps_memory_mb: float | None = param("mps_memory_mb")
    budget_ms: Milliseconds = param("budget_ms")
    percentile: float = param("percentile")
    min_fps: FramesPerSecond = param("min_fps")
    calibration: str | None = param("calibration")
    spread: bool = param("spread")
    cascade: tuple[str, ...] = param("cascade")
    cotenant_curve: tuple[str, ...] = param("cotenant_curve")
    cotenant_batch: tuple[float, ...] = param("cotenant_batch")
    cotenant_rps: tuple[float, ...] = param("cotenant_rps")
    decode_ms: Milliseconds | None = param("decode_ms")
    decoders: int | None = param("decoders")
    codec: str = param("codec")
    cpu_decode_ms: Milliseconds | None = param("cpu_decode_ms")

    @property
    def stages(self) -> WorkerStages:
        """The worker's stages (SPEC §5.1) as the one value the library takes."""
        return stages_of(self.__dict__)

    @classmethod
    def conflicts(cls, values: Mapping[str, Any]) -> list[tuple[tuple[str, ...], str]]:
        out = curve_conflicts(values) + _memory_conflicts(values) + queue_conflicts(values)
        out += workload_conflicts(values) + decoder_conflicts(values)
        fps = values.get("fps") or ()
        sessions = values.get("sessions", 3)
        if len(fps) not in (1, sessions):
            out.append(
                (
                    ("fps",),
                    f"fps has {len(fps)} values for {sessions} sessions (needs 1 or {sessions})",
                )
            )
        else:
            total = sum(fps) * (sessions if len(fps) == 1 else 1)
            too_long = frames_problem(total, values.get("duration_s", 30.0))
            if too_long:
                out.append((("duration_s", "fps"), too_long))
        out += _mode_conflicts(values, (values.get("mode", Sharing.mode),), "mode")
        return out


@dataclass(frozen=True)
class CompareParams(ParameterSet):
    """Everything the Compare page takes: one model across cards, under one plan budget
    and one way of serving (what the server keeps of a session's frames, and its queue).

    ``model`` unset means the page's default model; ``cards`` empty means every card
    with a curve of that model; ``precision`` and ``resolution`` narrow the curves.
    """

    page_path: ClassVar[str] = "compare"

    model: str | None = param("model")
    cards: tuple[str, ...] = param("cards")
    precision: str | None = param("precision")
    resolution: str | None = param("resolution")
    budget_ms: Milliseconds = param("budget_ms")
    percentile: float = param("percentile")
    min_fps: FramesPerSecond = param("min_fps")
    max_overwritten: float | None = param("max_overwritten")
    overhead_ms: Milliseconds = param("overhead_ms")
    policies: tuple[str, ...] = param("policies")
    seeds: int = param("seeds")
    duration_s: Seconds = param("duration_s")
    max_sessions: int | None = param("max_sessions")
    peak_sessions: int | None = param("peak_sessions")
    headroom: float = param("headroom")
    queue: str = param("queue")
    max_queue_size: int | None = param("max_queue_size")
    queue_timeout_us: Microseconds | None = param("queue_timeout_us")
    timeout_action: str = param("timeout_action")
    flagged: bool = param("flagged")

    @classmethod
    def conflicts(cls, values: Mapping[str, Any]) -> list[tuple[tuple[str, ...], str]]:
        return queue_conflicts(values)
