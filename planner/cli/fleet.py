"""``planner fleet``: the fleet over a day of demand, fixed against autoscaled, and the
model's cards compared on cost per day for the same demand."""

from __future__ import annotations

import argparse
from typing import Any

from planner import display
from planner.cli.output import note, open_store, print_json, table
from planner.cli.planning import add_plan_source, plan_from_args, plan_profile, print_fleet_summary
from planner.demand.fleet import DemandFleet
from planner.errors import BadInput
from planner.plan.fleet import (
    CardCost,
    card_costs,
    fleet_fields,
    fleet_text,
    option_fleets,
    plan_fleet,
)
from planner.plan.outcomes import option_fields
from planner.plan.recommend import recommend
from planner.plan.resolve import plan_inputs


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "fleet",
        help="GPUs and cost over a day of demand, fixed against autoscaled",
        description=(
            "Size the recommended option's fleet over a demand profile: GPUs per step "
            "(ceil(sessions x (1 + headroom) / seats per card)), peak GPUs, GPU-hours and cost "
            "per day and month, and mean seat utilisation, for a fixed fleet sized for the "
            "peak and for autoscaling with a lead time (each step runs the GPUs of the largest "
            "demand in itself and the next ceil(lead time / step) steps). A profile of a whole "
            "day or week repeats; any other ends at its last step. --compare-cards plans every "
            "card of the model at the same input size under the same criteria and compares "
            "their cost per day."
        ),
    )
    add_plan_source(parser)
    parser.add_argument(
        "--compare-cards",
        action="store_true",
        help="also plan the model's other cards (exclusive, each card's stored price) and "
        "compare their cost per day for this demand",
    )
    parser.add_argument("--steps", action="store_true", help="print every step, not only totals")
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    with open_store(args) as store:
        params, _ = plan_from_args(args, store)
        profile = plan_profile(args, params, store)
        if profile is None:
            raise BadInput(
                "--profile is needed: a built-in shape (flat, office-hours, evening-peak), a "
                "stored profile, or a CSV file of time,sessions"
            )
        inputs = plan_inputs(params, store)
        if not args.json:
            note(f"curve: {inputs.curve.label} ({inputs.curve.id})")
        result = recommend(inputs.request)
        fleet = plan_fleet(result, profile, params.lead_time_min)
        cards = None
        if args.compare_cards:
            if not args.json:
                note("planning the model's cards under the same criteria ...")
            cards = card_costs(
                store,
                params,
                profile,
                progress=lambda done, total: None if args.json else note(f"  {done}/{total}"),
            )
    if args.json:
        print_json(
            {
                "summary": result.summary,
                "option": None if result.recommended is None else result.recommended.label,
                "fleet": None if fleet is None else fleet.as_dict(),
                "options": [
                    {"option": o.label, **option_fields(o), **fleet_fields(f, gpu_hours=True)}
                    for o, f in option_fleets(result, profile, params.lead_time_min)
                ],
                "cards": None if cards is None else [c.as_dict() for c in cards],
            }
        )
        return 0
    print(result.summary)
    if fleet is None:
        print("no option holds a seat, so there is no fleet to size")
    else:
        print_fleet_summary(fleet)
        if args.steps:
            rows = [
                (f"{h:g}", f"{d:,.4g}", n, fx, a)
                for h, d, n, fx, a in zip(
                    profile.hours,
                    profile.sessions,
                    fleet.needed,
                    fleet.fixed.gpus,
                    fleet.autoscaled.gpus,
                    strict=True,
                )
            ]
            print(table(rows, ("hour", "sessions", "needed", "fixed", "autoscaled")))
    options = option_fleets(result, profile, params.lead_time_min)
    if len(options) > 1:
        print("every option on the same demand, cheapest per day first:")
        print(table([(o.label, o.seats, *_cost_cells(f)) for o, f in options], (
            "option", "seats per card", "fixed GPUs", "fixed per day", "autoscaled peak",
            "autoscaled GPU-h/day", "autoscaled per day",
        )))  # fmt: skip
    if cards is not None:
        print("cards compared on cost per day (exclusive, each card's stored price):")
        print(table([_card_cells(c) for c in cards], (
            "card", "precision", "seats per card", "with", "per card-hour", "fixed GPUs",
            "fixed per day", "autoscaled peak", "autoscaled per day",
        )))  # fmt: skip
        for row in cards:
            for problem in row.plan.problems:
                note(f"{row.plan.curve.card}: {problem}")
    return 0


def _cost_cells(fleet: DemandFleet) -> list[Any]:
    text = fleet_text(fleet)
    return [
        text["fixed_peak_gpus"], text["fixed_cost_per_day"], text["autoscaled_peak_gpus"],
        text["autoscaled_gpu_hours_per_day"], text["autoscaled_cost_per_day"],
    ]  # fmt: skip


def _card_cells(card: CardCost) -> list[Any]:
    row = card.as_dict()
    text = fleet_text(card.fleet)
    return [
        row["card"], row["precision"] or display.MISSING, row["seats"],
        row["option"] or "nothing fits", display.money(row["price_per_hour"]),
        text["fixed_peak_gpus"], text["fixed_cost_per_day"], text["autoscaled_peak_gpus"],
        text["autoscaled_cost_per_day"],
    ]  # fmt: skip
