"""Two plans side by side (SPEC §5.3): which inputs differ, and what each plan gives —
seats, latency at the cap, GPUs for the peak or the demand profile, and cost.

"What did raising the budget to 60 ms buy us?" is two saved plans (or the plan on the
page and a saved one) compared here; the Plan page and ``planner compare-plans`` show
the same rows.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from planner import display
from planner.demand.fleet import DemandFleet
from planner.errors import BadInput, NotFound
from planner.links.parameters import PARAMETERS, schema
from planner.links.urls import decode
from planner.plan.fleet import fleet_fields, plan_fleet, plan_profile
from planner.plan.outcomes import Recommendation, option_fields, peak_fields
from planner.plan.params import PlanParams
from planner.plan.recommend import recommend
from planner.plan.request import Request
from planner.plan.resolve import plan_curve, plan_inputs
from planner.sim.work import OverBudget
from planner.store.repository import Store


@dataclass(frozen=True)
class PlanSide:
    """One of the two plans: its parameters, its curve's label, and what it gives (or
    the problems that kept it from being planned)."""

    name: str  # "A" or "B"
    plan_id: str | None
    params: PlanParams
    curve_label: str
    result: Recommendation | None
    fleet: DemandFleet | None
    problems: tuple[str, ...] = ()

    def outcome(self) -> dict[str, Any]:
        """What the plan gives, as plain values (None where it has none); a figure that
        follows from a seat range has its ends beside it (``planner.spans``)."""
        result, fleet = self.result, self.fleet
        best = result.recommended if result is not None else None
        at = best.at_cap if best is not None else None
        return {
            **option_fields(best),
            "option": best.label if best is not None else None,
            "percentile": None if at is None else at.percentile,
            "latency_ms_at_cap": None if at is None else at.e2e_latency_ms,
            "min_fps_at_cap": None if at is None else at.min_fps,
            **peak_fields(result.fleet if result is not None else None),
            "profile": None if fleet is None else fleet.profile.name,
            **fleet_fields(fleet),
            "problems": list(self.problems),
        }

    def outcome_text(self) -> dict[str, str | None]:
        """What the plan gives, as text to read (``planner.display``), None where it has
        none: ranges as ``18–22, likely 20``."""
        result, fleet = self.result, self.fleet
        best = result.recommended if result is not None else None
        at = best.at_cap if best is not None else None
        peak = result.fleet if result is not None else None

        def rule(name: str, figure: str, write: Any = display.count) -> str | None:
            span = None if fleet is None else fleet.span(name, figure)
            return None if span is None else display.span(span, write)

        return {
            "seats_per_card": None if best is None else display.span(best.seats_span),
            "option": None if best is None else best.label,
            "latency_ms_at_cap": None
            if at is None or at.e2e_latency_ms is None
            else display.ms(at.e2e_latency_ms),
            "min_fps_at_cap": None if at is None else display.fps(at.min_fps),
            "gpus_for_peak": None
            if peak is None or peak.gpus_span is None
            else display.span(peak.gpus_span),
            "cost_per_seat_hour": None
            if peak is None or peak.cost_per_seat_hour_span is None
            else display.span(peak.cost_per_seat_hour_span, display.money),
            "profile": None if fleet is None else fleet.profile.name,
            "fixed_peak_gpus": rule("fixed", "peak_gpus"),
            "fixed_cost_per_day": rule("fixed", "cost_per_day", display.money),
            "autoscaled_peak_gpus": rule("autoscaled", "peak_gpus"),
            "autoscaled_cost_per_day": rule("autoscaled", "cost_per_day", display.money),
        }


@dataclass(frozen=True)
class InputRow:
    """One input of the two plans, as a link writes it, and whether they differ."""

    name: str
    meaning: str
    a: str
    b: str

    @property
    def differs(self) -> bool:
        return self.a != self.b


@dataclass(frozen=True)
class PlanComparison:
    a: PlanSide
    b: PlanSide
    inputs: tuple[InputRow, ...]

    @property
    def differing(self) -> tuple[InputRow, ...]:
        return tuple(row for row in self.inputs if row.differs)

    def outcome_rows(self) -> list[tuple[str, str, str]]:
        """(what, A's value, B's value) as text to read, for each outcome either plan
        has (``planner.display.MISSING`` where one has none)."""
        a, b = self.a.outcome_text(), self.b.outcome_text()
        labels = {
            "seats_per_card": "seats per card",
            "option": "with",
            "latency_ms_at_cap": "latency at the cap",
            "min_fps_at_cap": "slowest session at the cap",
            "gpus_for_peak": "GPUs for the peak",
            "cost_per_seat_hour": "cost per seat-hour",
            "profile": "demand profile",
            "fixed_peak_gpus": "GPUs, fixed fleet",
            "fixed_cost_per_day": "cost per day, fixed fleet",
            "autoscaled_peak_gpus": "peak GPUs, autoscaled",
            "autoscaled_cost_per_day": "cost per day, autoscaled",
        }
        return [
            (label, a[key] or display.MISSING, b[key] or display.MISSING)
            for key, label in labels.items()
            if a[key] is not None or b[key] is not None
        ]

    def as_dict(self) -> dict[str, Any]:
        """The document ``planner compare-plans --json`` prints."""
        return {
            "a": {"plan_id": self.a.plan_id, "curve": self.a.curve_label, **self.a.outcome()},
            "b": {"plan_id": self.b.plan_id, "curve": self.b.curve_label, **self.b.outcome()},
            "inputs": [
                {"name": r.name, "a": r.a, "b": r.b, "differs": r.differs} for r in self.inputs
            ],
            "differing": [r.name for r in self.differing],
        }


def saved_plan(store: Store, plan_id: str) -> PlanParams:
    """The parameters saved under ``plan_id`` (NotFound, or BadInput for a saved plan
    that this planner reads only in part)."""
    params, ignored = decode(PlanParams, {"plan": plan_id}, load_plan=store.plan)
    if ignored:
        raise (NotFound if any("no saved plan" in m for m in ignored) else BadInput)(
            [m.replace("ignored plan=", "plan ", 1) for m in ignored]
        )
    return params


def compare_plans(
    store: Store,
    a: PlanParams,
    b: PlanParams,
    *,
    a_id: str | None = None,
    b_id: str | None = None,
    recommend_with: Callable[[Request], Recommendation] = recommend,
) -> PlanComparison:
    """Plan both and set them side by side. ``recommend_with`` runs each recommendation
    (the dashboard passes its cached one, under its budget). A plan that cannot be
    planned (its curve deleted, over the budget) keeps its inputs and says why."""
    sides = [_side(store, n, p, i, recommend_with) for n, p, i in (("A", a, a_id), ("B", b, b_id))]
    rows = []
    for name, parameter in schema(PlanParams).items():
        texts = [_text(name, side) for side in sides]
        rows.append(InputRow(name, parameter.doc, texts[0], texts[1]))
    return PlanComparison(sides[0], sides[1], tuple(rows))


def _side(
    store: Store,
    name: str,
    params: PlanParams,
    plan_id: str | None,
    recommend_with: Callable[[Request], Recommendation],
) -> PlanSide:
    try:
        label = plan_curve(params, store).label
    except (BadInput, NotFound) as exc:
        return PlanSide(name, plan_id, params, "(no curve)", None, None, tuple(exc.problems))
    try:
        result = recommend_with(plan_inputs(params, store).request)
    except (BadInput, NotFound, OverBudget) as exc:
        return PlanSide(name, plan_id, params, label, None, None, tuple(exc.problems))
    try:
        fleet = plan_fleet(result, plan_profile(params, store), params.lead_time_min)
    except (BadInput, NotFound) as exc:
        return PlanSide(name, plan_id, params, label, result, None, tuple(exc.problems))
    return PlanSide(name, plan_id, params, label, result, fleet)


def _text(name: str, side: PlanSide) -> str:
    """A parameter as a link writes it; the curve by its label; "" when unset."""
    params = side.params
    if name == "curve":
        return side.curve_label + (f" ({params.curve})" if params.curve else "")
    if name == "points" and params.points is not None:
        return f"{len(params.points)} embedded points"
    value = getattr(params, name)
    return "" if value is None else PARAMETERS[name].codec.format(value)
