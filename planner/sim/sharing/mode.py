"""What a sharing mode is: the base class every mode derives from (``SharingMode``), the
base of each mode's own settings (``Settings``), one mode with its settings as a run reads
them (``Sharing``), what a user gave for the modes (``Choice``), and the registry that
names them (``SHARING_MODES``).

A mode is one object that owns everything the planner knows about it: how a batch's
latency changes, how many instances of our worker one card holds and what fraction of the
card one is, the memory it leaves, its isolation (SPEC §2.5) and assumption, what it needs
from the user, and the file that deploys it. The base class is the card to ourselves, as
measured; a mode overrides what differs. Every lookup goes through ``sharing_mode``, so a
name that is not registered is an error wherever it appears, never another mode.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import MISSING, asdict, dataclass, fields, is_dataclass
from typing import Any, ClassVar, Generic, TypeVar, cast, overload

import numpy as np

from planner import limits
from planner.curves.cards import Card
from planner.curves.fit import Edge
from planner.errors import BadInput
from planner.sim.sharing.deployment import ModeFile, Target
from planner.sim.sharing.space import Available, on_card
from planner.sim.sharing.timeline import Timeline
from planner.units import Megabytes, Milliseconds, Seconds

MAX_MEMORY_MB: Megabytes = limits.MEMORY_MB.high
"""The largest memory figure taken anywhere (16 TiB in MB of 2^20 bytes): far above any
card, low enough to catch a figure given in bytes."""

Conflict = tuple[tuple[str, ...], str]
"""The plan parameters that do not go together, and why (``ParameterSet.conflicts``)."""


@dataclass(frozen=True)
class Isolation:
    """What a mode guarantees between jobs on the card (SPEC §2.5)."""

    memory: str
    fault: str


@dataclass(frozen=True)
class Settings:
    """A mode's own settings: a frozen dataclass of the values one run of the mode reads,
    validated on construction (BadInput says what is wrong). A mode names its subclass in
    ``SharingMode.settings``; this base class has none (the card to ourselves). A field's
    ``metadata["words"]`` names it in a sentence ("co-tenant memory")."""


NO_SETTINGS = Settings()


@dataclass(frozen=True)
class Sharing:
    """How the card is shared (SPEC §3.4): the registered mode ``mode`` names and its own
    settings (an instance of that mode's ``SharingMode.settings``; left out: the mode's
    defaults). ``exclusive`` is the curve as measured and has none.

    ``Sharing.of`` builds one from settings by name, as links, stored load tests and
    scripts give them.
    """

    mode: str = "exclusive"
    settings: Settings = NO_SETTINGS

    def __post_init__(self) -> None:
        kind = sharing_mode(self.mode)
        if type(self.settings) is Settings and kind.settings is not Settings:
            object.__setattr__(self, "settings", kind.settings())
        if type(self.settings) is not kind.settings:
            raise TypeError(
                f"{kind.title} takes {kind.settings.__name__}, not {type(self.settings).__name__}"
            )

    @classmethod
    def of(cls, mode: str = "exclusive", **values: Any) -> Sharing:
        """The sharing of ``mode`` with its settings by name (``mps_share=50``); a setting of
        another mode is refused unless it is that mode's default (stored load tests name
        them all), and BadInput lists every problem."""
        kind = sharing_mode(mode)
        own = {f.name for f in fields(kind.settings)}
        problems = [_elsewhere(kind, name, value) for name, value in values.items()]
        try:
            settings = kind.settings(**{n: v for n, v in values.items() if n in own})
        except BadInput as exc:
            settings, problems = None, [*problems, *exc.problems]
        if settings is None or any(problems):
            raise BadInput([p for p in problems if p])
        return cls(mode, settings)

    @property
    def kind(self) -> SharingMode[Any]:
        """The mode object ``mode`` names (``SHARING_MODES``)."""
        return sharing_mode(self.mode)

    @property
    def label(self) -> str:
        return self.kind.label(self)

    def as_dict(self) -> dict[str, Any]:
        """The mode's name and its settings by name (``Sharing.of`` reads it back equal)."""
        settings = {
            f.name: _plain(getattr(self.settings, f.name))
            for f in fields(self.settings)
            # A setting added later is left out at its default, so what older planners
            # wrote and what this one writes for the same sharing are the same.
            if not (
                f.metadata.get("omitted_at_default") and getattr(self.settings, f.name) == f.default
            )
        }
        return {"mode": self.mode, **settings}

    def parameters(self) -> dict[str, Any]:
        """The plan parameters of these settings by name (``SharingMode.parameters``):
        what a link to the same run gives."""
        return {n: v for n, v in self.as_dict().items() if n in self.kind.parameters}


def _plain(value: object) -> object:
    """A setting as plain values: a tuple of dataclass values (co-tenants by workload)
    as a tuple of dicts."""
    if isinstance(value, tuple) and value and all(is_dataclass(v) for v in value):
        return tuple(asdict(v) for v in value)
    return value


def _elsewhere(kind: SharingMode[Any], name: str, value: object) -> str:
    """Why a setting ``kind`` does not have is refused ('' when it is not: the mode that
    has it gives it this value by default); TypeError when no mode has it."""
    if name in {f.name for f in fields(kind.settings)}:
        return ""
    for mode in SHARING_MODES.values():
        found = {f.name: f for f in fields(mode.settings)}.get(name)
        if found is None:
            continue
        if found.default is not MISSING and value == found.default:
            return ""
        return f"{found.metadata.get('words', name)} applies to {mode.title} only"
    raise TypeError(f"no sharing mode has a setting named {name!r}")


@dataclass(frozen=True)
class Choice:
    """What a user gave for the sharing modes, as a plan's parameters name it: every
    mode's parameters (each mode reads its own and ignores the others, so one plan can
    name several modes), the card's catalogue entry, and whether a curve measured on the
    chosen MIG profile is stored."""

    cotenants: tuple[float, ...] = ()
    busy_period_ms: Milliseconds = limits.DEFAULT_BUSY_PERIOD_MS
    mps_share: float | None = None
    mig_profile: str | None = None
    cotenant_memory_mb: tuple[Megabytes, ...] = ()
    mps_memory_mb: Megabytes | None = None
    cotenant_curve: tuple[str, ...] = ()
    card: Card | None = None
    measured_on_profile: bool = False
    cotenant_workloads: tuple[Any, ...] = ()

    @classmethod
    def of(cls, values: Mapping[str, Any], **extra: Any) -> Choice:
        """The choice among plan parameters by name (an absent or None value: the
        default); ``extra`` gives the card, whether the profile's curve is measured, and
        the co-tenants given by curve as workloads (``cotenant_workloads``: read from the
        store, ``planner.plan.cotenants``)."""
        given = {n: values[n] for n in CHOICE_PARAMETERS if values.get(n) is not None}
        return cls(**{**given, **extra})


CHOICE_PARAMETERS: tuple[str, ...] = tuple(
    f.name
    for f in fields(Choice)
    if f.name not in ("card", "measured_on_profile", "cotenant_workloads")
)
"""The plan parameters that belong to sharing modes (each mode names its own)."""


S = TypeVar("S", bound=Settings)


class SharingMode(Generic[S]):
    """One way of sharing the card. The base class is the card to ourselves, as measured:
    a mode sets the class attributes and overrides the methods that differ.

    Class attributes: ``name`` (how links, the command line and the store name it),
    ``title`` (how a sentence names it), ``isolation`` (SPEC §2.5), ``assumption`` (the
    model in one paragraph, part of every recommendation), ``settings`` (the frozen
    dataclass of its own settings, which validates them; ``Settings``: none),
    ``parameters`` (the plan parameters it reads, ``CHOICE_PARAMETERS``),
    ``as_measured`` (the card as it is, no model: what the reference worker can run),
    ``several_per_card`` (the card's other instances may run the same worker),
    ``needs_card`` (it needs the card's catalogue entry), ``worker_unit`` (what one worker
    runs on, in a deployment file) and ``instance_name`` (one of several on a card).
    """

    name: ClassVar[str]
    title: ClassVar[str]
    isolation: ClassVar[Isolation]
    assumption: ClassVar[str]
    settings: ClassVar[type[Settings]] = Settings
    parameters: ClassVar[tuple[str, ...]] = ()
    as_measured: ClassVar[bool] = False
    several_per_card: ClassVar[bool] = False
    needs_card: ClassVar[bool] = False
    worker_unit: ClassVar[str] = "card"
    instance_name: ClassVar[str] = "instance"

    def derivations(self, sharing: Sharing) -> tuple[str, ...]:
        """How settings the user gave in other terms became the model's figures (time-
        slicing: co-tenants given by their workload); none by default."""
        return ()

    def at_edge(self, sharing: Sharing, edge: Edge) -> Sharing:
        """``sharing`` as a run on one band edge of the plan's curve takes it: settings
        that follow the card's speed (time-slicing: co-tenants given by their workload)
        take that edge's; ``sharing`` itself by default."""
        return sharing

    def settings_of(self, sharing: Sharing) -> S:
        """This mode's settings in ``sharing`` (a sharing of this mode)."""
        return cast(S, sharing.settings)

    # --- What it needs from the user --------------------------------------------------

    def sharing(self, choice: Choice) -> Sharing:
        """The settings of this mode from what the user gave; BadInput says what is
        missing."""
        return Sharing(mode=self.name)

    def asked_for(self, choice: Choice) -> bool:
        """Whether a plan that names no modes considers this one (SPEC §3.5: exclusive,
        and each mode whose parameters are given)."""
        return False

    def offered_on(self, card: Card | None) -> bool:
        """Whether the dashboard offers this mode for a curve of ``card``."""
        return True

    def lacks(self, choice: Choice) -> str | None:
        """What a link that names this mode lacks, in the link's words (None: nothing)."""
        return None

    def conflicts(self, choice: Choice, duration_s: Seconds) -> list[Conflict]:
        """Parameters of this mode that do not go together with a run of ``duration_s``."""
        return []

    def profile_wanted(self, choice: Choice) -> str | None:
        """The profile whose stored curve would replace the derived one (MIG), or None."""
        return None

    def variants(self, choice: Choice) -> tuple[dict[str, Any], ...]:
        """The plan parameters that change for each setting a plan plans this mode under
        (MIG's ``mig_profile=all``: every profile of the card); ``({},)``: once, as given."""
        return ({},)

    # --- The settings of one run ------------------------------------------------------

    def label(self, sharing: Sharing) -> str:
        return self.title

    def short_label(self, sharing: Sharing) -> str:
        """How a chart's legend names an option of this mode: its name, or where one plan
        holds several settings of the mode (MIG's profiles), what tells them apart."""
        return self.name

    def run_problems(self, sharing: Sharing, duration_s: Seconds) -> list[str]:
        """What makes a run of ``duration_s`` under these settings too large to simulate."""
        return []

    # --- How a batch's latency changes (the engines) ----------------------------------

    def table(
        self, table: np.ndarray, sharing: Sharing, peak_upto: int | None = None
    ) -> np.ndarray:
        """The latency table (index 0 = batch 1) under this mode; a derived mode takes the
        card's best throughput over batch 1..``peak_upto`` (None: the whole table)."""
        return table

    def table_key(self, sharing: Sharing) -> tuple[object, ...]:
        """What of the settings decides ``table``: runs with equal keys share one table."""
        return (self.name, sharing)

    def horizon(self, sharing: Sharing, duration_ms: Milliseconds, slowest_ms: float) -> float:
        """How far a speed profile must reach for a run of ``duration_ms`` whose largest
        batch takes ``slowest_ms`` on the table."""
        return duration_ms

    def timeline_key(self, sharing: Sharing, seed: int) -> tuple[object, ...] | None:
        """What decides the speed profile of a run (None: it runs at full speed)."""
        return None

    def timeline(self, sharing: Sharing, seed: int, horizon_ms: Milliseconds) -> Timeline | None:
        """The speed profile of our context during a run, or None (full speed throughout)."""
        return None

    # --- What the recommendation says of it -------------------------------------------

    def derived(self, sharing: Sharing) -> bool:
        """Whether the curve is derived from the whole-card curve by a model."""
        return False

    def profile_used(self, sharing: Sharing) -> str | None:
        """The profile whose measured curve the run uses instead of the card's, or None."""
        return None

    def notes(self, sharing: Sharing) -> tuple[str, ...]:
        """Sentences the recommendation adds after the assumption."""
        return ()

    def instances_per_card(self, sharing: Sharing) -> int:
        """How many instances of our worker one card holds (SPEC §3.5)."""
        return 1

    def card_fraction(self, sharing: Sharing) -> float:
        """Our fraction of the card when the rest of it goes to other jobs."""
        return 1.0

    def available(self, sharing: Sharing, card_mb: Megabytes | None) -> Available:
        """The memory our worker may use, from the card's (MB; None: unknown)."""
        return on_card(card_mb)

    # --- How it is deployed -----------------------------------------------------------

    def worker_settings(self, sharing: Sharing) -> dict[str, Any]:
        """The worker's settings for this mode, beside its name (``worker.json``)."""
        return {}

    def deploy_file(self, sharing: Sharing, target: Target) -> ModeFile | None:
        """The text of the file that applies this mode to a card, with its name (the plan
        writes it, ``planner.plan.deploy``), or None when there is nothing to set."""
        return None


SHARING_MODES: dict[str, SharingMode[Any]] = {}
"""The sharing modes by name, in the order they are offered (``planner.sim.sharing``
registers the built-in ones)."""


class Names(Sequence[str]):
    """The registered modes' names in order, read from ``SHARING_MODES`` each time they
    are used: what the link codecs, the command line's choices and the dashboard offer,
    so a mode registered after they were built is offered too."""

    @overload
    def __getitem__(self, index: int) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[str]: ...
    def __getitem__(self, index: int | slice) -> str | Sequence[str]:
        return list(SHARING_MODES)[index]

    def __len__(self) -> int:
        return len(SHARING_MODES)

    def __contains__(self, name: object) -> bool:
        return name in SHARING_MODES

    def __iter__(self) -> Iterator[str]:
        return iter(list(SHARING_MODES))

    def __repr__(self) -> str:
        return f"Names({list(SHARING_MODES)!r})"


MODE_NAMES = Names()


def register(mode: SharingMode[Any]) -> SharingMode[Any]:
    """Add ``mode`` to ``SHARING_MODES`` (its name must be new) and return it."""
    if mode.name in SHARING_MODES:
        raise ValueError(f"a sharing mode named {mode.name!r} is already registered")
    SHARING_MODES[mode.name] = mode
    return mode


def unregister(name: str) -> None:
    """Remove the mode named ``name`` (a test's toy mode) from ``SHARING_MODES``."""
    del SHARING_MODES[name]


def unknown(name: object) -> str:
    return f"sharing mode {name!r} is not one of {', '.join(SHARING_MODES)}"


def sharing_mode(name: str) -> SharingMode[Any]:
    """The mode registered as ``name``; BadInput for any other name."""
    mode = SHARING_MODES.get(name) if isinstance(name, str) else None
    if mode is None:
        raise BadInput(unknown(name))
    return mode


def default_modes(choice: Choice) -> tuple[str, ...]:
    """The modes a plan considers when it names none: exclusive, plus each mode whose
    parameters are given."""
    return tuple(name for name, mode in SHARING_MODES.items() if mode.asked_for(choice))


def offered_modes(card: Card | None) -> list[str]:
    """The modes offered for a curve of ``card`` (MIG only on a card that supports it)."""
    return [name for name, mode in SHARING_MODES.items() if mode.offered_on(card)]


def parameters_of(names: Iterable[str]) -> tuple[str, ...]:
    """The plan parameters the named modes read, each once, in the modes' order."""
    return tuple(dict.fromkeys(p for name in names for p in sharing_mode(name).parameters))


def owner_of(parameter: str) -> SharingMode[Any]:
    """The first mode that reads ``parameter`` (what a command line's flag needs)."""
    return next(m for m in SHARING_MODES.values() if parameter in m.parameters)
