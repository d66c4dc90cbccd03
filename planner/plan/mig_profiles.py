"""Which MIG profile? Every profile of a card planned in one recommendation.

A plan that names ``mig_profile=all`` (``planner.sim.sharing.mig.ALL_PROFILES``) resolves
to one request with a MIG sharing per profile the card's catalogue entry lists
(``planner.plan.resolve.plan_inputs``), beside the plan's other modes. One recommendation
searches them all in lockstep, under one budget of work, so the profiles are judged by the
same runs the single-profile plan would make. ``profile_plans`` reads each profile's best
option off it: seats per card, the GPUs for the peak and the cost of a seat.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from planner import display
from planner.demand.profiles import HOURS_PER_MONTH
from planner.plan.outcomes import (
    MONEY_DIGITS,
    Fleet,
    Option,
    Recommendation,
    fleet,
    option_fields,
    peak_fields,
)
from planner.plan.params import PlanParams
from planner.plan.recommend import recommend
from planner.plan.request import Request
from planner.plan.resolve import PlanInputs, plan_inputs
from planner.sim.scenario import Sharing
from planner.sim.sharing.mig import ALL_PROFILES
from planner.spans import fields
from planner.store.repository import Store


@dataclass(frozen=True)
class ProfilePlan:
    """One sharing of the plan (a MIG profile, or another mode planned beside them) and
    its best option, None when none of its options holds a seat; ``fleet`` is that option's
    GPUs and cost (None without a peak or a price)."""

    sharing: Sharing
    best: Option | None
    fleet: Fleet | None

    @property
    def name(self) -> str:
        """``MIG 1g.10gb``, ``exclusive``: the sharing's label."""
        return self.sharing.label

    def as_dict(self) -> dict[str, Any]:
        best, sized = self.best, self.fleet
        at = best.at_cap if best is not None else None
        return {
            "sharing": self.name,
            "mig_profile": self.sharing.parameters().get("mig_profile"),
            "option": None if best is None else best.label,
            **option_fields(best),
            "instances_per_card": None if best is None else best.per_card,
            "latency_ms_at_cap": None if at is None else at.e2e_latency_ms,
            **peak_fields(sized),
            **fields(
                "cost_per_seat_month",
                None if sized is None else sized.cost_per_seat_month_span,
                MONEY_DIGITS,
            ),
        }


def profile_plans(result: Recommendation) -> list[ProfilePlan]:
    """Each sharing of ``result``'s request, in the request's order (the card's profiles
    in catalogue order), with its best option (the first of its options in the ranking)
    sized at the request's peak, headroom and price."""
    request = result.request
    rows = []
    for sharing in request.sharings:
        mine = [o for o in result.options if o.sharing == sharing and o.cap >= 1]
        best = mine[0] if mine else None
        sized = fleet(
            best,
            peak_sessions=request.peak_sessions,
            headroom=request.headroom,
            price_per_hour=request.price_per_hour,
        )
        rows.append(ProfilePlan(sharing, best, sized))
    return rows


def plans_every_profile(result: Recommendation) -> bool:
    """Whether ``result``'s request plans more than one MIG profile (``mig_profile=all``):
    one mode under several settings (``SharingMode.variants``)."""
    modes = [s.mode for s in result.request.sharings]
    return len(set(modes)) < len(modes)


def profile_rows(
    plans: Sequence[ProfilePlan], *, percentile: float, peak: bool, price: bool
) -> list[dict[str, str]]:
    """One row per MIG profile (and each other mode planned beside them), in the card's
    order: its seats per card, the GPUs for the peak and the cost of a seat (per hour and
    per month of ``HOURS_PER_MONTH`` hours), then the option that holds them and its
    latency at the cap, written as ``planner.display`` writes figures. The GPU and cost
    columns appear when a peak or a price is set. The page, the report and ``planner
    recommend --mig-profile all`` show these rows."""
    rows = []
    for plan in plans:
        best, sized = plan.best, plan.fleet
        at = best.at_cap if best is not None else None
        row = {
            "sharing": plan.name,
            "seats per card": best.seats if best is not None else "0",
        }
        if peak:
            row["GPUs for peak"] = display.span(None if sized is None else sized.gpus_span)
        if price:
            hourly = sized.cost_per_seat_hour_span if sized is not None else None
            monthly = sized.cost_per_seat_month_span if sized is not None else None
            row["cost per seat-hour"] = display.span(hourly, display.money)
            row[f"per seat-month ({HOURS_PER_MONTH} h)"] = display.span(monthly, display.money)
        row["best option"] = best.policy if best is not None else "none holds a seat"
        row["seats per instance"] = (
            f"{best.seats_per_instance} x {best.per_card}"
            if best is not None and best.per_card > 1
            else ""
        )
        latency = at.e2e_latency_ms if at is not None else None
        row[f"p{percentile:g} latency at cap (ms)"] = display.ms(latency, unit=False)
        rows.append(row)
    return rows


def result_rows(result: Recommendation) -> list[dict[str, str]]:
    """``profile_rows`` of every sharing ``result`` planned, under its own criteria, peak
    and price."""
    request = result.request
    return profile_rows(
        profile_plans(result),
        percentile=request.criteria.percentile,
        peak=request.peak_sessions is not None,
        price=request.price_per_hour is not None,
    )


def every_profile(params: PlanParams) -> PlanParams:
    """``params`` asking for every MIG profile of the card (the other modes it plans
    stay)."""
    return replace(params, mig_profile=ALL_PROFILES)


def plan_profiles(
    params: PlanParams,
    store: Store | None,
    *,
    recommend_with: Callable[[Request], Recommendation] = recommend,
) -> tuple[PlanInputs, Recommendation, list[ProfilePlan]]:
    """Plan every MIG profile of the plan's card at once: the inputs, the one
    recommendation over all of them (``recommend_with`` runs it: the dashboard passes its
    cached one under the page's budget of work) and each profile's row. BadInput when the
    card does not support MIG."""
    inputs = plan_inputs(every_profile(params), store)
    result = recommend_with(inputs.request)
    return inputs, result, profile_plans(result)
