"""A plan's fleet over a day: its demand profile resolved, sized on the recommended
option's seats per card, and the model's cards compared on cost per day for the same
profile (SPEC §5.3).

The Plan page, ``planner fleet``, ``planner recommend --profile`` and the report all
come here; the arithmetic itself is ``planner.demand.profiles``'s.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from planner import display
from planner.demand.fleet import DemandFleet, demand_fleet
from planner.demand.profiles import SHAPES, DemandProfile, builtin_profile
from planner.errors import BadInput
from planner.plan.compare_cards import SHARED, CardPlan, compare_cards
from planner.plan.outcomes import Option, Recommendation
from planner.plan.params import CompareParams, PlanParams
from planner.plan.recommend import recommend
from planner.plan.request import Request
from planner.plan.resolve import plan_curve
from planner.spans import Span, fields, int_fields
from planner.store.repository import Store


def plan_profile(params: PlanParams, store: Store | None) -> DemandProfile | None:
    """The demand profile a plan names: a built-in shape scaled to its peak sessions, or a
    stored profile (NotFound when the store has none of that name); None without one."""
    if params.profile is None:
        return None
    if params.profile in SHAPES:
        return builtin_profile(params.profile, params.peak_sessions)
    if store is None:
        raise BadInput(f"the profile {params.profile!r} is stored; reading it needs the store")
    return store.profile(params.profile)


def plan_fleet(
    result: Recommendation,
    profile: DemandProfile | None,
    lead_time_min: float,
    option: Option | None = None,
) -> DemandFleet | None:
    """The fleet over ``profile`` for ``option`` (the recommended one by default), at the
    request's headroom and price; None without a profile or when the option holds no seat."""
    chosen = option if option is not None else result.recommended
    if profile is None or chosen is None or chosen.seats_per_card < 1:
        return None
    return demand_fleet(
        profile,
        seats_per_card=chosen.seats_per_card,
        headroom=result.request.headroom,
        lead_time_min=lead_time_min,
        price_per_hour=result.request.price_per_hour,
        card_share=chosen.card_share,
        seat_range=(chosen.seats_per_card_low, chosen.seats_per_card_high),
    )


def option_fleets(
    result: Recommendation, profile: DemandProfile | None, lead_time_min: float
) -> list[tuple[Option, DemandFleet]]:
    """Every option that holds a seat with its fleet over ``profile``, cheapest per day
    autoscaled first (then fewest GPU-hours, for a card without a price), ties in the
    recommendation's order."""
    rows = []
    for option in result.options:
        fleet = plan_fleet(result, profile, lead_time_min, option)
        if fleet is not None:
            rows.append((option, fleet))

    def cost(row: tuple[Option, DemandFleet]) -> tuple[float, float]:
        rule = row[1].autoscaled
        return (rule.cost_per_day or 0.0, rule.gpu_hours_per_day)

    return sorted(rows, key=cost)


@dataclass(frozen=True)
class CardCost:
    """One card of the comparison (its plan under the same criteria, exclusive) and its
    fleet over the profile."""

    plan: CardPlan
    fleet: DemandFleet | None

    def as_dict(self) -> dict[str, Any]:
        return {**self.plan.as_dict(), **fleet_fields(self.fleet, gpu_hours=True)}


def fleet_fields(fleet: DemandFleet | None, *, gpu_hours: bool = False) -> dict[str, Any]:
    """A fleet's headline figures for a row of JSON, each a span (``planner.spans``):
    peak GPUs and cost per day, fixed and autoscaled (and autoscaled GPU-hours)."""

    def span(rule: str, figure: str) -> Span | None:
        return None if fleet is None else fleet.span(rule, figure)

    out = {
        **int_fields("fixed_peak_gpus", span("fixed", "peak_gpus")),
        **fields("fixed_cost_per_day", span("fixed", "cost_per_day"), 2),
        **int_fields("autoscaled_peak_gpus", span("autoscaled", "peak_gpus")),
    }
    if gpu_hours:
        out.update(
            fields("autoscaled_gpu_hours_per_day", span("autoscaled", "gpu_hours_per_day"), 2)
        )
    out.update(fields("autoscaled_cost_per_day", span("autoscaled", "cost_per_day"), 2))
    return out


def card_costs(
    store: Store,
    params: PlanParams,
    profile: DemandProfile,
    *,
    recommend_with: Callable[[Request], Recommendation] = recommend,
    progress: Callable[[int, int], None] = lambda _done, _total: None,
) -> list[CardCost]:
    """Every stored whole-card curve of the plan's model at the plan's input size, planned
    with the plan's criteria (``planner.plan.compare_cards.compare_cards``: exclusive, each card's
    stored price, but the plan's own price for the card it plans when it gives one), and
    each one's fleet over ``profile``; cheapest per day first, cards without a price or a
    seat last."""
    curve = plan_curve(params, store)
    prices = {} if params.price_per_hour is None else {curve.card: params.price_per_hour}
    compare = CompareParams(
        model=curve.model,
        resolution=curve.resolution,
        **{name: getattr(params, name) for name in SHARED},
    )
    rows = []
    plans = compare_cards(
        store, compare, recommend_with=recommend_with, progress=progress, prices=prices
    )
    for plan in plans:
        fleet = None
        if plan.result is not None:
            fleet = plan_fleet(plan.result, profile, params.lead_time_min)
        rows.append(CardCost(plan, fleet))

    def cost(row: CardCost) -> tuple[int, float]:
        day = None if row.fleet is None else row.fleet.autoscaled.cost_per_day
        return (0, day) if day is not None else (1, 0.0)

    return sorted(rows, key=cost)


def rule_text(fleet: DemandFleet, rule: str) -> dict[str, str]:
    """One provisioning rule's figures as text to read (``planner.display``), each a range
    ``18–22, likely 20`` where seats per card is one: peak GPUs, GPU-hours per day, cost per
    day and per month, and mean seat utilisation (on the likely seats per card)."""
    return {
        "peak_gpus": display.span(fleet.span(rule, "peak_gpus")),
        "gpu_hours_per_day": display.span(fleet.span(rule, "gpu_hours_per_day"), display.number),
        "cost_per_day": display.span(fleet.span(rule, "cost_per_day"), display.money),
        "cost_per_month": display.span(fleet.span(rule, "cost_per_month"), display.money),
        "mean_utilisation": display.fraction(getattr(fleet, rule).mean_utilisation),
    }


def fleet_text(fleet: DemandFleet | None) -> dict[str, str]:
    """``fleet_fields``'s figures as text to read (``planner.display.MISSING`` without a
    fleet), under the same keys."""
    if fleet is None:
        return dict.fromkeys(
            ("fixed_peak_gpus", "fixed_cost_per_day", "autoscaled_peak_gpus",
             "autoscaled_gpu_hours_per_day", "autoscaled_cost_per_day"),
            display.MISSING,
        )  # fmt: skip
    fixed, auto = rule_text(fleet, "fixed"), rule_text(fleet, "autoscaled")
    return {
        "fixed_peak_gpus": fixed["peak_gpus"],
        "fixed_cost_per_day": fixed["cost_per_day"],
        "autoscaled_peak_gpus": auto["peak_gpus"],
        "autoscaled_gpu_hours_per_day": auto["gpu_hours_per_day"],
        "autoscaled_cost_per_day": auto["cost_per_day"],
    }
