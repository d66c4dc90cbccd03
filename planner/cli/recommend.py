"""``planner recommend``: the seat cap per policy and sharing mode under a latency budget."""

from __future__ import annotations

import argparse
from typing import Any

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
from planner.demand.profiles import HOURS_PER_MONTH
from planner.errors import BadInput
from planner.plan.answer import Answer, plan_answer
from planner.plan.fleet import plan_fleet
from planner.plan.mig_profiles import plans_every_profile, profile_plans, result_rows
from planner.plan.options import Recommendation
from planner.plan.resolve import plan_inputs
from planner.sim.pipeline import PART_LABELS, PARTS


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
    _print(result)
    if profiles is not None:
        _print_profiles(result)
    if demand is not None:
        print_fleet_summary(demand)
    elif profile is not None:
        note("no fleet over the profile: no option holds a seat")
    return 0


def _print(result: Recommendation) -> None:
    answer = plan_answer(result)
    _print_answer(answer)
    rows = [
        (
            o.policy,
            o.sharing.label + (" (derived)" if o.derived else ""),
            o.seats,
            o.seats_per_instance if o.per_card > 1 else "",
            "-"
            if o.at_cap is None or o.at_cap.e2e_latency_ms is None
            else display.ms(o.at_cap.e2e_latency_ms, unit=False)
            + (" (low confidence)" if o.at_cap.low_confidence else ""),
            display.fps(None if o.at_cap is None else o.at_cap.min_fps, unit=False),
            f"{o.sharing and _isolation(o)}",
            "yes" if o.extrapolated else "",
        )
        for o in result.options
    ]
    pct = f"p{result.request.criteria.percentile:g}"
    print(
        table(rows, ("policy", "sharing", "seats per card", "per instance", f"{pct} ms at cap",
                     "min fps at cap", "isolation (memory/fault)", "extrapolated"))
    )  # fmt: skip
    print("why the next seat fails:")
    for o in result.options:
        print(f"  {o.policy}, {o.sharing.label}: {o.binding_constraint}")
    best = result.recommended
    if best is not None and best.at_cap is not None:
        _print_stages(best.at_cap, best.cap)
    fleet = result.fleet
    if fleet is not None:
        if fleet.gpus_span is not None:
            print(
                f"fleet: {display.span(fleet.gpus_span, unit=' GPUs')} for "
                f"{fleet.peak_sessions:,} sessions at peak with "
                f"{display.fraction(fleet.headroom)} headroom"
            )
        if fleet.cost_per_seat_hour_span is not None:
            share = (
                ""
                if fleet.card_share == 1
                else f", our {display.fraction(fleet.card_share)} of the card"
            )
            cost = display.span(fleet.cost_per_seat_hour_span, display.money, " per seat-hour")
            month = display.span(fleet.cost_per_seat_month_span, display.money, " per seat-month")
            print(
                f"cost: {cost}; {month} (a month of {HOURS_PER_MONTH} hours, 30 days around "
                f"the clock){share}"
            )
            if fleet.cost_per_hour_span is not None:
                hourly = display.span(fleet.cost_per_hour_span, display.money, " per hour")
                print(f"the peak's fleet costs {hourly}")
    print("assumptions:")
    for sentence in answer.assumptions:
        print(f"  - {sentence}")


def _print_profiles(result: Recommendation) -> None:
    """Every MIG profile of the card side by side (``planner.plan.mig_profiles``)."""
    rows = result_rows(result)
    print("every MIG profile of the card (each one's best option):")
    print(table([tuple(r.values()) for r in rows], tuple(rows[0])))


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


def _print_stages(at: Any, cap: int) -> None:
    """Where the end-to-end latency goes at the cap, and how busy the CPU threads are."""
    if at.cpu is not None:
        pool = at.cpu
        wait = display.ms(pool.total.wait_mean_ms)
        p99 = (
            "" if pool.total.wait_p99_ms is None else f", p99 {display.ms(pool.total.wait_p99_ms)}"
        )
        busy = display.fraction(pool.busy_fraction)
        print(
            f"CPU threads at {cap} sessions: {pool.workers} busy {busy}, "
            f"queue wait mean {wait}{p99}"
        )
    stages = at.stages
    if stages is None or stages.mean is None or stages.tail is None:
        return
    print(f"end-to-end latency at {cap} sessions by stage (mean / p{stages.percentile:g} tail):")
    for part in PARTS:
        mean, tail = getattr(stages.mean, part), getattr(stages.tail, part)
        print(f"  {PART_LABELS[part]:<22} {display.ms_column(mean)} {display.ms_column(tail)}")
    total = f"{display.ms_column(stages.mean.total)} {display.ms_column(stages.tail.total)}"
    print(f"  {'total':<22} {total}")


def _isolation(option: Any) -> str:
    iso = option.sharing.kind.isolation
    return f"{iso.memory} / {iso.fault}"
