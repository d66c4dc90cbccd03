"""``planner recommend``: the seat cap per policy and sharing mode under a latency budget."""

from __future__ import annotations

import argparse

from planner import display
from planner.cli.output import (
    add_curve_source,
    note,
    open_store,
    print_json,
    table,
)
from planner.cli.planning import (
    add_plan_options,
    calibration_note,
    plan_params,
    plan_profile,
    print_fleet_summary,
    recommend_showing_progress,
    with_calibration,
)
from planner.errors import BadInput
from planner.plan.answer import Answer
from planner.plan.fleet import plan_fleet
from planner.plan.mig_profiles import plans_every_profile, profile_plans
from planner.plan.outcomes import Recommendation
from planner.plan.resolve import pin_batcher, plan_inputs
from planner.views.plan import PlanView, plan_view
from planner.views.table import Table


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "recommend",
        help="seat cap per policy and sharing mode under a latency budget",
        description=(
            "Find how many sessions one card holds under each scheduling policy and sharing "
            "mode: the latency percentile (end to end, all seeds pooled) within the budget, "
            "the slowest session at or above the frame-rate floor on every seed. Caps are "
            "computed on the fitted curve and on both edges of its band, so a cap can be a "
            "range."
        ),
    )
    add_curve_source(parser)
    add_plan_options(parser)
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    params = plan_params(args)
    with open_store(args) as store:
        if args.card and args.curve:
            stored = store.curve(args.curve)
            if stored.card.lower() != args.card.strip().lower():
                raise BadInput(
                    f"--card {args.card} differs from the stored curve's card {stored.card}"
                )
        params = with_calibration(params, args, store)
        inputs = plan_inputs(params, store)
        params = pin_batcher(params, inputs.curve)  # the links it prints pin them
        profile = plan_profile(args, params, store)
    if not args.json:
        note(f"curve: {inputs.curve.label} ({inputs.curve.id}); {inputs.fitted.description}")
        note(calibration_note(inputs))
    if inputs.request.floor_warning is not None:
        note(f"warning: {inputs.request.floor_warning}")
    result = recommend_showing_progress(inputs.request, quiet=args.json)
    demand = plan_fleet(result, profile, params.lead_time_min)
    profiles = profile_plans(result) if plans_every_profile(result) else None
    if args.json:
        print_json(
            {
                **result.as_dict(),
                **({} if profiles is None else {"profiles": [p.as_dict() for p in profiles]}),
                "demand": None if demand is None else demand.as_dict(),
                "latest_calibration": None if inputs.latest is None else inputs.latest.id,
            }
        )
        return 0
    view = plan_view(params, inputs, result)
    _print(view, result)
    if view.profiles is not None:
        _print_profiles(view)
    if demand is not None:
        print_fleet_summary(demand)
    elif profile is not None:
        note("no fleet over the profile: no option holds a seat")
    return 0


def _print(view: PlanView, result: Recommendation) -> None:
    """The plan's view (``planner.views.plan``) as text: the answer, every option, the
    latency by stage at the cap, the fleet and its cost, the assumptions."""
    _print_answer(view.answer)
    print(_table(view.options))
    best = result.recommended
    if best is not None and view.stages is not None:
        print(f"end-to-end latency at {best.cap} sessions by stage:")
        print(_table(view.stages))
        print(view.stages_note)
    fleet = result.fleet
    if fleet is not None and fleet.gpus_span is not None:
        print(
            f"fleet: {display.span(fleet.gpus_span, unit=' GPUs')} for "
            f"{fleet.peak_sessions:,} sessions at peak with "
            f"{display.fraction(fleet.headroom)} headroom"
        )
    if view.cost is not None:
        print(view.cost)
    print("assumptions:")
    for sentence in view.assumptions:
        print(f"  - {sentence}")


def _table(view: Table) -> str:
    """A view's table as padded text."""
    return table(view.rows, view.header)


def _print_profiles(view: PlanView) -> None:
    """Every MIG profile of the card side by side (``planner.plan.mig_profiles``)."""
    assert view.profiles is not None
    print("every MIG profile of the card (each one's best option):")
    print(_table(view.profiles))


def _print_answer(answer: Answer) -> None:
    """The plan's answer (``planner.plan.answer``) in the Plan page's words, one paragraph
    a line, with pointers to the options that change it."""
    print(answer.headline)
    print(answer.plain)
    if answer.instances is not None:
        print(f"{answer.instances.sentence} Say otherwise with --other-jobs.")
    print(answer.why.sentence)
    for item in answer.why.items:
        print(f"  - {item}")
    if answer.extrapolated is not None:
        print(answer.extrapolated)
    # Lower case, as the command's advice has always read ("measure batch 4 next").
    print(answer.measure_next[:1].lower() + answer.measure_next[1:])
    if answer.low_confidence is not None:
        print(f"{answer.low_confidence} Raise --seeds or --duration-s.")
