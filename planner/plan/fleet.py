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

from planner.demand.fleet import DemandFleet, demand_fleet
from planner.demand.profiles import SHAPES, DemandProfile, builtin_profile
from planner.errors import BadInput
from planner.plan.compare_cards import SHARED, CardPlan, compare_cards
from planner.plan.options import Option, Recommendation
from planner.plan.params import CompareParams, PlanParams
from planner.plan.recommend import recommend
from planner.plan.request import Request
from planner.plan.resolve import plan_curve
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
        fleet = self.fleet
        return {
            **self.plan.as_dict(),
            "fixed_peak_gpus": None if fleet is None else fleet.fixed.peak_gpus,
            "fixed_cost_per_day": None if fleet is None else fleet.fixed.cost_per_day,
            "autoscaled_peak_gpus": None if fleet is None else fleet.autoscaled.peak_gpus,
            "autoscaled_gpu_hours_per_day": None
            if fleet is None
            else fleet.autoscaled.gpu_hours_per_day,
            "autoscaled_cost_per_day": None if fleet is None else fleet.autoscaled.cost_per_day,
        }


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
