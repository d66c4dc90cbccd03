"""What a recommendation answers: each option (policy, sharing mode) with its cap, range
and the reasons the next seat fails, the fleet for a peak, and the ranked result.

``failures`` judges one session count's pooled runs against the criteria; the reasons
name the latency budget first, then the frame-rate floor, then overwriting (SPEC §3.5).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from planner import display
from planner.curves.fit import Edge
from planner.demand.fleet import gpus_for
from planner.demand.profiles import HOURS_PER_MONTH
from planner.plan.request import Criteria, Request
from planner.sim.scenario import Sharing
from planner.sim.sharing import derived
from planner.sim.sweep import Pooled
from planner.spans import Span, fields, int_fields
from planner.units import UsdPerHour

MONEY_DIGITS = 4
"""Decimals JSON keeps of a figure in US dollars (a hundredth of a cent)."""


@dataclass(frozen=True)
class Failure:
    """One criterion an option fails at some session count, in plain words."""

    constraint: str  # "latency", "fps", "overwritten", or what stops it: "cpu", "memory"
    sessions: int
    detail: str  # e.g. "the slowest session gets 9.3 fps under oldest-first, below ..."

    @property
    def sentence(self) -> str:
        return f"at {self.sessions} session{'s' if self.sessions != 1 else ''} {self.detail}"


@dataclass(frozen=True)
class Option:
    """One (policy, sharing mode) with its seat caps and why the next seat fails.

    ``cap`` (with ``cap_low`` and ``cap_high`` from the band's edges) is the simulated cap
    of one instance of the worker: the whole card, or one MIG instance or MPS client.
    ``per_card`` is how many such instances a card holds for us: the mode's instance
    count (MIG: the profile's maximum on the card; MPS: floor(100 / share)), or 1 when the
    rest of the card goes to other jobs; ``card_share`` is the part of the card's price a
    card's seats carry (1, or our fraction of the card when it is shared with other jobs).
    Options are ranked, sized and priced on seats per card.
    """

    policy: str
    sharing: Sharing
    cap: int
    cap_low: int
    cap_high: int
    at_cap: Pooled | None  # central curve, at the cap
    failures: tuple[Failure, ...]  # at cap + 1 on the central curve; empty at the limit
    binding_constraint: str
    extrapolated: bool
    history: tuple[Pooled, ...]  # central curve: the full runs its search made, n <= cap + 1
    deciding_batches: tuple[int, ...] = ()  # frames per batch size in the deciding runs
    per_card: int = 1
    card_share: float = 1.0
    edge_constraints: tuple[tuple[Edge, str], ...] = ()  # (edge, why its next seat fails)
    # The uncalibrated range (SPEC §6.2, ``planner.plan.margin``): the factor m that
    # widened ``cap_low`` to min(band low, floor(m x cap)), and the band's own caps; None
    # where no margin applies (a calibrated plan, or one that pins none).
    margin: float | None = None
    band_low: int | None = None
    band_high: int | None = None

    def edge_constraint(self, edge: Edge) -> str | None:
        """Why the next seat fails on one edge of the band (``pessimistic`` at
        ``cap_low + 1``, ``optimistic`` at ``cap_high + 1``), in the words of
        ``binding_constraint``; None where that edge's cap equals the central one."""
        return dict(self.edge_constraints).get(edge)

    @property
    def band_cap_low(self) -> int:
        """The cap on the band's pessimistic edge, whatever the margin made of ``cap_low``."""
        return self.cap_low if self.band_low is None else self.band_low

    @property
    def band_cap_high(self) -> int:
        return self.cap_high if self.band_high is None else self.band_high

    @property
    def margin_sets_low(self) -> bool:
        """Whether the margin, not the band, sets the low end of the range."""
        return self.cap_low < self.band_cap_low

    @property
    def mode(self) -> str:
        return self.sharing.mode

    @property
    def derived(self) -> bool:
        """Whether this mode's curve is derived from the whole-card curve by a model."""
        return derived(self.sharing)

    @property
    def label(self) -> str:
        return f"{self.policy}, {self.sharing.label}" + (" (derived)" if self.derived else "")

    @property
    def seats_per_card(self) -> int:
        return self.cap * self.per_card

    @property
    def seats_per_card_low(self) -> int:
        """Seats per card on the band's worse edge (the smaller of the two caps)."""
        return min(self.cap_low, self.cap) * self.per_card

    @property
    def seats_per_card_high(self) -> int:
        return max(self.cap_high, self.cap) * self.per_card

    @property
    def seats_span(self) -> Span:
        """Seats per card over the band: its edges and the fitted curve's cap."""
        return Span(self.seats_per_card_low, self.seats_per_card, self.seats_per_card_high)

    @property
    def seats_per_instance(self) -> str:
        """``"3"`` or ``"4–5"`` when the band makes the cap a range."""
        return _range(self.cap, self.cap_low, self.cap_high)

    @property
    def seats(self) -> str:
        """Seats per card: ``"21"``, or ``"21–28"`` when the band makes the cap a range."""
        k = self.per_card
        return _range(self.cap * k, self.cap_low * k, self.cap_high * k)

    @property
    def instances_note(self) -> str:
        """How seats per card follow from the cap, e.g. "3 per instance x 7 instances"."""
        if self.per_card == 1:
            return ""
        unit = self.sharing.kind.instance_name
        return f"{self.seats_per_instance} per {unit} x {self.per_card} {unit}s"

    def as_dict(self) -> dict[str, Any]:
        isolation = self.sharing.kind.isolation
        at = self.at_cap
        return {
            "policy": self.policy,
            "mode": self.sharing.mode,
            "sharing": self.sharing.label,
            "derived": self.derived,
            "cap": self.cap,
            "cap_low": self.cap_low,
            "cap_high": self.cap_high,
            "band_cap_low": self.band_cap_low,
            "band_cap_high": self.band_cap_high,
            "uncalibrated_margin": self.margin,
            "seats_per_instance": self.seats_per_instance,
            "instances_per_card": self.per_card,
            "seats_per_card": self.seats_per_card,
            "seats_per_card_low": self.seats_per_card_low,
            "seats_per_card_high": self.seats_per_card_high,
            "seats": self.seats,
            "card_share": self.card_share,
            "binding_constraint": self.binding_constraint,
            "failures": [f.sentence for f in self.failures],
            "extrapolated": self.extrapolated,
            "isolation": {"memory": isolation.memory, "fault": isolation.fault},
            "percentile": at.percentile if at else None,
            "latency_ms_at_cap": at.e2e_latency_ms if at else None,
            "frames_at_cap": at.frames if at else 0,
            "low_confidence": at.low_confidence if at else False,
            "min_fps_at_cap": at.min_fps if at else None,
            "cpu_busy_fraction_at_cap": at.cpu.busy_fraction if at and at.cpu else None,
            "stages_ms_at_cap": at.stages.as_dict() if at and at.stages else None,
            "edge_constraints": dict(self.edge_constraints),
        }


def option_fields(option: Option | None) -> dict[str, Any]:
    """An option's seats per card for a row of JSON: the likely count with its ends
    (``planner.spans``, integers; 0 without an option) and ``seats``, the range as text."""
    if option is None:
        return {**int_fields("seats_per_card", Span(0, 0, 0)), "seats": "0"}
    return {**int_fields("seats_per_card", option.seats_span), "seats": option.seats}


def peak_fields(fleet: Fleet | None) -> dict[str, Any]:
    """GPUs for the peak and cost per seat-hour for a row of JSON, each with its ends."""
    return {
        **int_fields("gpus_for_peak", None if fleet is None else fleet.gpus_span),
        **fields(
            "cost_per_seat_hour",
            None if fleet is None else fleet.cost_per_seat_hour_span,
            MONEY_DIGITS,
        ),
    }


def _range(central: int, low: int, high: int) -> str:
    lo, hi = min(low, central, high), max(low, central, high)
    return str(central) if lo == hi else f"{lo}–{hi}"


@dataclass(frozen=True)
class Fleet:
    """GPUs for a peak of concurrent sessions, and what a seat costs (SPEC §3.5): both
    on seats per card, and both a range where seats per card is one (``planner.spans``):
    the fewest GPUs and the cheapest seat on the most seats per card, the likely figure
    on the fitted curve's."""

    peak_sessions: int | None
    headroom: float
    seats: Span  # seats per card: the band's edges and the fitted curve's
    price_per_hour: UsdPerHour | None
    card_share: float = 1.0

    @property
    def seats_per_card(self) -> int:
        return int(self.seats.likely)

    @property
    def gpus_span(self) -> Span | None:
        """GPUs for the peak over the seat range; None without a peak."""
        peak = self.peak_sessions
        if peak is None:
            return None
        return self.seats.map(lambda seats: gpus_for(peak, self.headroom, int(seats)))

    @property
    def gpus(self) -> int | None:
        span = self.gpus_span
        return None if span is None else int(span.likely)

    @property
    def cost_per_seat_hour_span(self) -> Span | None:
        """The price of a card's share over its seats, over the seat range."""
        price = self.price_per_hour
        if price is None:
            return None
        return self.seats.map(lambda seats: price * self.card_share / seats)

    @property
    def cost_per_seat_hour(self) -> float | None:
        span = self.cost_per_seat_hour_span
        return None if span is None else span.likely

    @property
    def cost_per_seat_month_span(self) -> Span | None:
        """A seat around the clock for a month of ``HOURS_PER_MONTH`` hours (30 days)."""
        hourly = self.cost_per_seat_hour_span
        return None if hourly is None else hourly.scaled(HOURS_PER_MONTH)

    @property
    def cost_per_seat_month(self) -> float | None:
        span = self.cost_per_seat_month_span
        return None if span is None else span.likely

    @property
    def cost_per_hour_span(self) -> Span | None:
        """What the peak's fleet costs per hour, over the seat range."""
        gpus, price = self.gpus_span, self.price_per_hour
        if gpus is None or price is None:
            return None
        return gpus.scaled(price * self.card_share)

    def as_dict(self) -> dict[str, Any]:
        return {
            "peak_sessions": self.peak_sessions,
            "headroom": self.headroom,
            **int_fields("seats_per_card", self.seats),
            **int_fields("gpus", self.gpus_span),
            "price_per_hour": self.price_per_hour,
            "card_share": self.card_share,
            **fields("cost_per_seat_hour", self.cost_per_seat_hour_span, MONEY_DIGITS),
            **fields("cost_per_seat_month", self.cost_per_seat_month_span, MONEY_DIGITS),
            "hours_per_month": HOURS_PER_MONTH,
            **fields("cost_per_hour", self.cost_per_hour_span, MONEY_DIGITS),
        }


@dataclass(frozen=True)
class Recommendation:
    """Ranked options, the recommended one (or None), a one-sentence summary, the batch
    size to measure next, fleet and cost, and the assumptions behind it all."""

    request: Request
    options: tuple[Option, ...]
    recommended: Option | None
    summary: str
    measure_next: int | None
    fleet: Fleet | None
    assumptions: tuple[str, ...]
    simulations: int
    measure_next_basis: str = ""

    @property
    def closest(self) -> Option | None:
        """The recommended option; with none, the option that came closest at one session
        (the one ``summary`` describes and the batch to measure next is advised for)."""
        if self.recommended is not None or not self.options:
            return self.recommended
        return closest(self.options, self.request.criteria)

    def as_dict(self) -> dict[str, Any]:
        """The document ``planner recommend --json`` prints."""
        return {
            "recommended": self.recommended.as_dict() if self.recommended else None,
            "summary": self.summary,
            "options": [o.as_dict() for o in self.options],
            "measure_next": self.measure_next,
            "measure_next_basis": self.measure_next_basis,
            "fleet": self.fleet.as_dict() if self.fleet else None,
            "assumptions": list(self.assumptions),
            "simulations": self.simulations,
            "calibration": None
            if self.request.calibration is None
            else self.request.calibration.as_dict(),
            # The version of the uncalibrated range's margin the plan pins (SPEC §6.2).
            "margin": self.request.margin,
        }


def failures(pooled: Pooled, criteria: Criteria) -> tuple[Failure, ...]:
    """The criteria ``pooled`` fails, latency budget first, then fps floor, then overwriting."""
    n, policy = pooled.sessions, pooled.policy
    out = []
    p = f"p{pooled.percentile:g}"
    if pooled.e2e_latency_ms is None:
        out.append(Failure("latency", n, f"no frame is delivered under {policy}"))
    elif pooled.e2e_latency_ms > criteria.budget_ms and pooled.queue_grows:
        queued = pooled.queued_fraction or 0.0
        out.append(
            Failure(
                "latency",
                n,
                f"the queue grows: the {p} latency reaches {display.ms(pooled.late_ms)} by the end "
                f"of the run (from {display.ms(pooled.early_ms)} in its first third) under "
                f"{policy}, over the {display.ms(criteria.budget_ms)} budget, with "
                f"{display.fraction(queued)} of "
                "frames still queued at the end",
            )
        )
    elif pooled.e2e_latency_ms > criteria.budget_ms:
        out.append(
            Failure(
                "latency",
                n,
                f"the {p} latency is {display.ms(pooled.e2e_latency_ms)} under {policy}, "
                f"over the {display.ms(criteria.budget_ms)} budget",
            )
        )
    if pooled.min_fps < criteria.min_fps:
        out.append(
            Failure(
                "fps",
                n,
                f"the slowest session gets {display.fps(pooled.min_fps)} under {policy}, "
                f"below the {display.fps(criteria.min_fps)} floor",
            )
        )
    limit = criteria.max_overwritten
    if limit is not None and pooled.overwritten_fraction > limit:
        out.append(
            Failure(
                "overwritten",
                n,
                f"{display.fraction(pooled.overwritten_fraction)} of frames are overwritten under "
                f"{policy}, over the {display.fraction(limit)} limit",
            )
        )
    return tuple(out)


def binding_text(fails: Sequence[Failure]) -> str:
    """The first failure in words, and the others after "also"."""
    text = fails[0].sentence
    if len(fails) > 1:
        text += "; also " + "; ".join(f.detail for f in fails[1:])
    return text


def limit_reached(request: Request) -> str:
    return f"meets every criterion up to {request.largest:,} sessions, the largest count considered"


def closest(options: Sequence[Option], criteria: Criteria) -> Option:
    """The option that misses the criteria by least at one session."""
    return min(
        options,
        key=lambda o: _shortfall(o.history[0], criteria) if o.history else math.inf,
    )


def _shortfall(pooled: Pooled, criteria: Criteria) -> float:
    """How far a run misses the criteria, as relative excesses added up (0 = meets)."""
    if pooled.e2e_latency_ms is None:
        return math.inf
    miss = max(pooled.e2e_latency_ms / criteria.budget_ms - 1.0, 0.0)
    if criteria.min_fps > 0:
        miss += max(1.0 - pooled.min_fps / criteria.min_fps, 0.0)
    if criteria.max_overwritten is not None:
        miss += max(pooled.overwritten_fraction - criteria.max_overwritten, 0.0)
    return miss


def fleet(
    option: Option | None,
    *,
    peak_sessions: int | None,
    headroom: float,
    price_per_hour: UsdPerHour | None,
) -> Fleet | None:
    """GPUs and cost per seat for ``option`` (None when it holds no seat, or when neither a
    peak nor a price is given). The dashboard calls this on a cached recommendation, so
    changing the peak or the price needs no new simulations."""
    if option is None or option.cap < 1 or (peak_sessions is None and price_per_hour is None):
        return None
    peak, price = peak_sessions, price_per_hour
    # An edge of the band that holds no seat leaves the range at the seats it does hold.
    low = option.seats_per_card_low if option.seats_per_card_low >= 1 else option.seats_per_card
    return Fleet(
        peak_sessions=peak,
        headroom=headroom,
        seats=Span(low, option.seats_per_card, option.seats_per_card_high),
        price_per_hour=price,
        card_share=option.card_share,
    )


def sized_fleet(request: Request, option: Option | None) -> Fleet | None:
    return fleet(
        option,
        peak_sessions=request.peak_sessions,
        headroom=request.headroom,
        price_per_hour=request.price_per_hour,
    )
