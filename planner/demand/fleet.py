"""The fleet that serves a demand profile (SPEC §5.3), and the one rule for how many GPUs
a number of concurrent sessions needs.

For a plan, with ``S`` seats per card and headroom ``h``:

- GPUs needed in step t: ``ceil(D_t (1 + h) / S)`` (the peak rule of SPEC §3.5 per step).
- **Fixed fleet**: every step runs the peak step's GPUs.
- **Autoscaling with a lead time T**: a GPU takes T from being asked for to serving, and
  the scaler acts at step boundaries, so a GPU that must serve at the start of a step is
  started (and paid for) in an earlier step. Step t therefore runs the GPUs of the largest
  demand among the steps that begin before its end plus T: itself and the next
  ``ceil(T / step)`` steps. For a repeating profile the steps after the last are the
  first ones again; for one that does not repeat there are none, which is the same as
  demand staying at its last value (the last step is already in every such window), so
  nothing is provisioned for demand the profile does not describe.
- GPU-hours per day = the mean GPUs per step x 24 (a week's figure divided by 7; a
  profile of another length scaled to 24 hours); cost per day = GPU-hours per day x the
  card's hourly price x the part of the card a seat is charged for; per month = 30 days.
- Mean seat utilisation = demand over provisioned seats (GPUs x S), averaged over the
  steps that provision any seat.

Nothing here touches the store or a simulation: the fleet is arithmetic on a plan's
seats per card, so changing the profile or the lead time simulates nothing.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from planner import display, limits
from planner.demand.profiles import DAYS_PER_MONTH, LEAD_TIME_MIN, DemandProfile
from planner.errors import BadInput
from planner.spans import Span, fields, int_fields
from planner.units import UsdPerHour


def gpus_for(sessions: float, headroom: float, seats_per_card: int) -> int:
    """GPUs for ``sessions`` concurrent sessions: ``ceil(D (1 + h) / seats per card)``
    (SPEC §3.5; 0 for no demand). The peak's fleet and every step of a profile use it."""
    if seats_per_card < 1:
        raise BadInput("a fleet needs at least one seat per card")
    return max(0, math.ceil(sessions * (1.0 + headroom) / seats_per_card - 1e-9))


def _round(value: float | None, digits: int) -> float | None:
    return None if value is None else round(value, digits)


@dataclass(frozen=True)
class Provisioning:
    """One provisioning rule over a profile: GPUs in every step and what they cost."""

    rule: str  # "fixed" or "autoscaled"
    gpus: tuple[int, ...]
    step_minutes: float
    price_per_hour: UsdPerHour | None
    card_share: float
    utilisation: tuple[float | None, ...]  # per step; None where no seat is provisioned

    @property
    def peak_gpus(self) -> int:
        return max(self.gpus)

    @property
    def gpu_hours(self) -> float:
        """GPU-hours over the whole profile."""
        return sum(self.gpus) * self.step_minutes / 60.0

    @property
    def gpu_hours_per_day(self) -> float:
        """GPU-hours in 24 hours: the mean GPUs per step x 24."""
        return sum(self.gpus) / len(self.gpus) * 24.0

    @property
    def cost_per_day(self) -> float | None:
        if self.price_per_hour is None:
            return None
        return self.gpu_hours_per_day * self.price_per_hour * self.card_share

    @property
    def cost_per_month(self) -> float | None:
        day = self.cost_per_day
        return None if day is None else day * DAYS_PER_MONTH

    @property
    def mean_utilisation(self) -> float | None:
        """Demand over provisioned seats, averaged over the steps that provision any."""
        used = [u for u in self.utilisation if u is not None]
        return sum(used) / len(used) if used else None

    def as_dict(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "gpus": list(self.gpus),
            "peak_gpus": self.peak_gpus,
            "gpu_hours": round(self.gpu_hours, 2),
            "gpu_hours_per_day": round(self.gpu_hours_per_day, 2),
            "cost_per_day": _round(self.cost_per_day, 2),
            "cost_per_month": _round(self.cost_per_month, 2),
            "mean_utilisation": _round(self.mean_utilisation, 4),
        }


@dataclass(frozen=True)
class DemandFleet:
    """A plan's fleet over a demand profile: GPUs needed per step, and the two
    provisioning rules side by side (see the module docstring)."""

    profile: DemandProfile
    seats_per_card: int
    headroom: float
    lead_time_min: float
    needed: tuple[int, ...]
    fixed: Provisioning
    autoscaled: Provisioning
    edges: tuple[DemandFleet, ...] = ()  # the same profile at the seat range's ends

    @property
    def seats(self) -> Span:
        """Seats per card over the plan's range (one value without edges)."""
        return Span.of(self.seats_per_card, *(e.seats_per_card for e in self.edges))

    def span(self, rule: str, figure: str) -> Span | None:
        """A figure of one rule (``fixed`` or ``autoscaled``: ``peak_gpus``,
        ``gpu_hours_per_day``, ``cost_per_day``, ``cost_per_month``) over the seat range,
        the likely one on the plan's seats per card; None where it does not exist."""
        values = [getattr(getattr(f, rule), figure) for f in (self, *self.edges)]
        if values[0] is None:
            return None
        return Span.of(*values)

    @property
    def steps_ahead(self) -> int:
        """How many later steps an autoscaled step provisions for: ``ceil(T / step)``."""
        return steps_ahead(self.lead_time_min, self.profile.step_minutes)

    @property
    def notes(self) -> tuple[str, ...]:
        """The assumptions behind these figures, in words."""
        p = self.profile
        out = [
            f"GPUs per step = ceil(sessions x {1 + self.headroom:g} / {self.seats_per_card} "
            "seats per card); the fixed fleet runs the peak step's GPUs all the time.",
            f"Autoscaling: a GPU takes {self.lead_time_min:g} min from being asked for to "
            "serving and the scaler acts at step boundaries, so each step runs the GPUs of "
            f"the largest demand in itself and the next {self.steps_ahead} step(s) "
            f"({p.step_minutes:g} min each).",
        ]
        if p.repeats:
            out.append("The profile repeats: after its last step comes its first again.")
        else:
            out.append(
                "The profile does not repeat: it ends at its last step, and the last steps "
                "provision only for the demand left in the profile (as if demand stayed at "
                "its last value). Per-day figures scale its "
                f"{p.span_minutes / 60:g} hours to 24."
            )
        out.append(
            "Cost per day = GPU-hours per day x the card's hourly price"
            + (
                f" x our {display.fraction(self.fixed.card_share)} of the card"
                if self.fixed.card_share < 1
                else ""
            )
            + f"; a month is {DAYS_PER_MONTH} days."
        )
        return tuple(out)

    def _rule_dict(self, rule: str) -> dict[str, Any]:
        out = getattr(self, rule).as_dict()
        out.update(int_fields("peak_gpus", self.span(rule, "peak_gpus")))
        out.update(fields("gpu_hours_per_day", self.span(rule, "gpu_hours_per_day"), 2))
        for money in ("cost_per_day", "cost_per_month"):
            out.update(fields(money, self.span(rule, money), 2))
        return out

    def as_dict(self) -> dict[str, Any]:
        return {
            "profile": self.profile.as_dict(),
            "seats_per_card": self.seats_per_card,
            "headroom": self.headroom,
            "lead_time_min": self.lead_time_min,
            "steps_ahead": self.steps_ahead,
            "repeats": self.profile.repeats,
            **int_fields("seats_per_card", self.seats),
            "needed_gpus": list(self.needed),
            "fixed": self._rule_dict("fixed"),
            "autoscaled": self._rule_dict("autoscaled"),
            "notes": list(self.notes),
        }


def steps_ahead(lead_time_min: float, step_minutes: float) -> int:
    """``ceil(T / step)``: the later steps whose demand a step must already serve."""
    return max(0, math.ceil(lead_time_min / step_minutes - 1e-9))


def demand_fleet(
    profile: DemandProfile,
    *,
    seats_per_card: int,
    headroom: float,
    lead_time_min: float = LEAD_TIME_MIN,
    price_per_hour: UsdPerHour | None = None,
    card_share: float = 1.0,
    seat_range: tuple[int, int] | None = None,
) -> DemandFleet:
    """The fleet for ``profile`` at ``seats_per_card`` (an option's seats per card),
    fixed at the peak and autoscaled with ``lead_time_min`` (see the module docstring).
    With ``seat_range`` (the fewest and most seats per card the plan's band allows), the
    same fleet at both ends comes along as ``edges``, so that its figures are ranges.

    >>> p = DemandProfile("x", (10, 0, 30, 0) * 6)
    >>> f = demand_fleet(p, seats_per_card=4, headroom=0.2, lead_time_min=60)
    >>> f.needed[:4], f.autoscaled.gpus[:4], f.fixed.peak_gpus
    ((3, 0, 9, 0), (3, 9, 9, 3), 9)
    """
    problems = []
    if not (isinstance(seats_per_card, int) and seats_per_card >= 1):
        problems.append("a fleet needs at least one seat per card")
    if not limits.HEADROOM.holds(headroom):
        problems.append(f"headroom must be a fraction {limits.HEADROOM.words()}")
    if not limits.LEAD_TIME_MIN.holds(lead_time_min):
        problems.append(f"the lead time must be {limits.LEAD_TIME_MIN.words()} minutes")
    if price_per_hour is not None and not limits.PRICE_PER_HOUR.holds(price_per_hour):
        problems.append(f"the price must be {limits.PRICE_PER_HOUR.words()} USD per hour")
    if problems:
        raise BadInput(problems)
    demand = profile.sessions
    n = len(demand)
    needed = tuple(gpus_for(d, headroom, seats_per_card) for d in demand)
    ahead = steps_ahead(lead_time_min, profile.step_minutes)
    autoscaled = []
    for t in range(n):
        if profile.repeats:
            window = [needed[(t + k) % n] for k in range(min(ahead, n - 1) + 1)]
        else:
            window = list(needed[t : t + ahead + 1])
        autoscaled.append(max(window))
    peak = max(needed)

    def rule(name: str, gpus: Sequence[int]) -> Provisioning:
        return Provisioning(
            rule=name,
            gpus=tuple(gpus),
            step_minutes=profile.step_minutes,
            price_per_hour=price_per_hour,
            card_share=card_share,
            utilisation=tuple(
                d / (g * seats_per_card) if g > 0 else None
                for d, g in zip(demand, gpus, strict=True)
            ),
        )

    edges: list[DemandFleet] = []
    for seats in sorted(set(seat_range or ())):
        if seats >= 1 and seats != seats_per_card:
            edges.append(
                demand_fleet(
                    profile, seats_per_card=seats, headroom=headroom,
                    lead_time_min=lead_time_min, price_per_hour=price_per_hour,
                    card_share=card_share,
                )
            )  # fmt: skip
    return DemandFleet(
        profile=profile,
        seats_per_card=seats_per_card,
        headroom=headroom,
        lead_time_min=float(lead_time_min),
        needed=needed,
        fixed=rule("fixed", [peak] * n),
        autoscaled=rule("autoscaled", autoscaled),
        edges=tuple(edges),
    )
