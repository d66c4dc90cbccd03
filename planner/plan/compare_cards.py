"""Comparing cards: one model's curves on every card, planned under the same criteria.

``compare_cards`` is what the Compare page shows and ``planner compare-cards`` prints:
each of the model's whole-card curves (narrowed by cards, precision and resolution)
planned with the same criteria on its card, exclusive, with the seats per card, latency
at the cap, cost per seat, GPUs for a peak and the batch to measure next.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from planner.curves.cards import Card
from planner.curves.curve import Curve
from planner.errors import BadInput, NotFound
from planner.links.parameters import schema
from planner.plan.outcomes import Recommendation, option_fields, peak_fields
from planner.plan.params import CompareParams, PlanParams
from planner.plan.recommend import recommend
from planner.plan.request import Request
from planner.plan.resolve import default_curve, plan_inputs
from planner.store.repository import Store

SHARED = tuple(
    n
    for n in schema(CompareParams)
    if n in schema(PlanParams) and n not in ("model", "precision", "resolution", "flagged")
)
"""The plan parameters a comparison gives every curve."""


@dataclass(frozen=True)
class CardPlan:
    """One curve of the comparison and its plan (or why it could not be planned)."""

    curve: Curve
    card: Card | None
    result: Recommendation | None
    problems: tuple[str, ...] = ()

    @property
    def price_per_hour(self) -> float | None:
        """The hourly price the card was planned at: the plan's own where it priced this
        card, else the card's stored price (None: no price)."""
        if self.result is not None:
            return self.result.request.price_per_hour
        return self.card.price_per_hour if self.card is not None else None

    def as_dict(self) -> dict[str, Any]:
        """A row of the comparison: the card, the seats and how, cost and fleet."""
        result = self.result
        best = result.recommended if result is not None else None
        fleet = result.fleet if result is not None else None
        at = best.at_cap if best is not None else None
        return {
            "card": self.curve.card,
            "curve": self.curve.id,
            "precision": self.curve.precision,
            "resolution": self.curve.resolution,
            **option_fields(best),
            "option": best.label if best is not None else None,
            "latency_ms_at_cap": None if at is None else at.e2e_latency_ms,
            "min_fps_at_cap": None if at is None else at.min_fps,
            "price_per_hour": self.price_per_hour,
            **peak_fields(fleet),
            "measure_next": None if result is None else result.measure_next,
            "problems": list(self.problems),
        }


def model_of(store: Store, params: CompareParams) -> str:
    """The model compared: the parameters', else the default curve's."""
    return params.model or default_curve(store).model


def comparable_curves(store: Store, params: CompareParams) -> list[Curve]:
    """The model's whole-card curves on the chosen cards, precision and resolution; a
    flagged curve (a failed drift check) only when ``params.flagged`` includes them."""
    return [c for c in _candidates(store, params) if params.flagged or not c.flag]


def flagged_left_out(store: Store, params: CompareParams) -> list[Curve]:
    """The flagged curves a comparison leaves out (none when it includes them)."""
    return [] if params.flagged else [c for c in _candidates(store, params) if c.flag]


def _candidates(store: Store, params: CompareParams) -> list[Curve]:
    wanted = {card.lower() for card in params.cards}
    return [
        curve
        for curve in store.curves(model=model_of(store, params))
        if (not wanted or curve.card.lower() in wanted)
        and params.precision in (None, curve.precision)
        and params.resolution in (None, curve.resolution)
        and curve.mig_profile is None
    ]


def settle(store: Store, params: CompareParams) -> tuple[CompareParams, list[str]]:
    """The parameters with what the store cannot compare left out, and one message for
    each thing left out: a model, cards, or a precision and resolution with no curve."""
    ignored = []
    if params.model is not None and not store.curves(model=params.model):
        ignored.append(f"ignored model={params.model!r}: no stored curve of that model")
        params = replace(params, model=None)
    model = model_of(store, params)
    names = {curve.card.lower(): curve.card for curve in store.curves(model=model)}
    unknown = [card for card in params.cards if card.lower() not in names]
    if unknown:
        ignored.append(
            f"ignored cards {', '.join(repr(u) for u in unknown)}: no curve of {model!r} on them"
        )
    cards = tuple(dict.fromkeys(names[x.lower()] for x in params.cards if x.lower() in names))
    if cards != params.cards:
        params = replace(params, cards=cards)
    if (params.precision or params.resolution) and not comparable_curves(store, params):
        ignored.append("ignored precision and resolution: no curve of the model has them")
        params = replace(params, precision=None, resolution=None)
    return params, ignored


def compare_cards(
    store: Store,
    params: CompareParams,
    *,
    recommend_with: Callable[[Request], Recommendation] = recommend,
    progress: Callable[[int, int], None] = lambda _done, _total: None,
    prices: Mapping[str, float] | None = None,
) -> list[CardPlan]:
    """Plan every comparable curve with the same criteria, exclusive, in the store's order.

    ``recommend_with`` runs each recommendation (the dashboard passes its cached one);
    ``progress(done, total)`` is called after each curve. A curve that cannot be planned
    is a ``CardPlan`` with its problems; work over its budget (``OverBudget``) stops the
    whole comparison, since every later card would be over it too. ``prices`` gives an
    hourly price by card name (any case) that replaces the card's stored one: a plan's
    own price for the card it plans.
    """
    priced = {name.lower(): price for name, price in (prices or {}).items()}
    curves = comparable_curves(store, params)
    shared = {name: getattr(params, name) for name in SHARED}
    plans = []
    for index, curve in enumerate(curves):
        try:
            price = priced.get(curve.card.lower())
            inputs = plan_inputs(PlanParams(curve=curve.id, price_per_hour=price, **shared), store)
            result = recommend_with(inputs.request)
        except (BadInput, NotFound) as exc:
            plans.append(CardPlan(curve, None, None, tuple(exc.problems)))
        else:
            plans.append(CardPlan(curve, inputs.card, result))
        progress(index + 1, len(curves))
    return plans
