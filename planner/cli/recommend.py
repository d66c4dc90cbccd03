"""``planner recommend``: the seat cap per policy and sharing mode under a latency budget."""

from __future__ import annotations

import argparse
from typing import Any

from planner import display
from planner.cli.output import (
    add_curve_source,
    link_values,
    note,
    open_store,
    option,
    option_name,
    print_json,
    table,
)
from planner.cli.planning import (
    calibration_note,
    plan_profile,
    print_fleet_summary,
    profile_file,
    with_calibration,
)
from planner.curve import parse_points_option
from planner.errors import BadInput
from planner.fleet import plan_fleet
from planner.links import PlanParams
from planner.pipeline import PART_LABELS, PARTS
from planner.plan import plan_inputs
from planner.policies import POLICIES
from planner.recommend import Recommendation, recommend
from planner.scenario import MODES


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


def add_plan_options(parser: argparse.ArgumentParser) -> None:
    """The options of a plan (shared with ``planner link``); defaults and ranges are the
    library's, read from the link parameters (``planner.links.PARAMETERS``)."""
    parser.add_argument("--card", help="the card (default: the stored curve's card)")
    option(parser, "budget_ms", "latency budget, ms end to end")
    option(parser, "percentile", "percentile of the budget")
    option(parser, "min_fps", "slowest session's fps floor")
    parser.add_argument("--max-overwritten", help="largest overwritten fraction, e.g. 0.05")
    option(parser, "overhead_ms", "per-frame time outside the GPU, ms")
    parser.add_argument(
        "--policies", help=f"comma-separated, from {', '.join(POLICIES)} (default: all)"
    )
    parser.add_argument(
        "--modes",
        help=f"comma-separated, from {', '.join(MODES)} (default: exclusive, plus each mode "
        "whose parameters are given)",
    )
    parser.add_argument("--cotenants", help="time-slicing: co-tenant duty cycles, e.g. 0.9,0.9")
    option(parser, "busy_period_ms", "co-tenants' mean busy period, ms")
    parser.add_argument("--mps-share", help="MPS: our compute share in percent, e.g. 50")
    parser.add_argument("--mig-profile", help="MIG: a profile of the card, e.g. 3g.40gb")
    add_worker_options(parser)
    option(parser, "seeds", "phase seeds per session count")
    option(parser, "duration_s", "simulated seconds per run")
    option(parser, "max_sessions", "largest session count")
    parser.add_argument("--peak-sessions", help="peak concurrent sessions, for the fleet size")
    option(parser, "headroom", "fleet headroom fraction")
    parser.add_argument("--price-per-hour", help="card price, USD per hour (default: stored)")
    parser.add_argument(
        "--other-jobs",
        action="store_true",
        help="the rest of the card goes to other jobs (MIG, MPS): count one instance of the "
        "worker per card and charge a seat our fraction of the card (default: the card's "
        "other instances run the same worker)",
    )
    parser.add_argument(
        "--profile",
        metavar="NAME|FILE",
        help="demand over the day: a built-in shape (flat, office-hours, evening-peak; scaled "
        "to --peak-sessions), a stored profile (`planner profiles list`), or a CSV file of "
        "time,sessions; adds the fleet and cost per day, fixed and autoscaled",
    )
    option(
        parser,
        "lead_time_min",
        "autoscaling lead time, minutes from asking for a GPU to it serving",
    )


PLAN_OPTIONS = (
    "budget_ms", "percentile", "min_fps", "max_overwritten", "overhead_ms", "policies",
    "modes", "cotenants", "busy_period_ms", "mps_share", "mig_profile", "seeds",
    "duration_s", "max_sessions", "peak_sessions", "headroom", "price_per_hour", "profile",
    "lead_time_min", "network_ms", "pre_ms", "post_ms", "cpu_workers", "cotenant_memory_mb",
    "mps_memory_mb",
)  # fmt: skip
"""The options of ``add_plan_options`` that are plan parameters, read by their codecs."""


def add_worker_options(parser: argparse.ArgumentParser) -> None:
    """The worker beyond the GPU and the memory the card leaves it (SPEC §5.1), shared by
    ``simulate``, ``recommend`` and ``link``."""
    option(parser, "network_ms", "one-way network delay, ms; crossed both ways")
    option(parser, "pre_ms", "CPU work per frame before the GPU (decode, resize), ms")
    option(parser, "post_ms", "CPU work per frame after the GPU, ms")
    option(
        parser,
        "cpu_workers",
        "CPU threads doing the pre and post work (0 = unlimited: the stages only delay)",
    )
    parser.add_argument(
        "--cotenant-memory-mb",
        help="time-slicing: GPU memory each co-tenant uses, MB (one for all or one per co-tenant)",
    )
    parser.add_argument("--mps-memory-mb", help="MPS: our client's GPU memory limit, MB")
    parser.add_argument(
        "--calibration",
        metavar="latest|none|ID",
        help="the curve's calibration by a load test (`planner loadtest`): latest (the "
        "default for simulate and recommend: the curve's newest, if it has one), none, or a "
        "calibration id; planner link adds one only when asked",
    )


def plan_params(args: argparse.Namespace) -> PlanParams:
    """Validated plan parameters from the options (BadInput lists every problem)."""
    # A profile given as a file is read by ``planning.plan_profile``, not named in the plan.
    names = [n for n in PLAN_OPTIONS if n != "profile" or profile_file(args) is None]
    values = link_values(args, names)
    values["other_jobs"] = bool(args.other_jobs)
    if args.points is not None:
        values["points"] = parse_points_option(args.points)
        if args.card:
            values["card"] = args.card
    else:
        values["curve"] = args.curve
    try:
        return PlanParams(**values)
    except BadInput as exc:
        raise BadInput([option_name(p) for p in exc.problems]) from None


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
    result = recommend(inputs.request)
    demand = plan_fleet(result, profile, params.lead_time_min)
    if args.json:
        print_json(
            {
                **result.as_dict(),
                "demand": None if demand is None else demand.as_dict(),
                "latest_calibration": None if inputs.latest is None else inputs.latest.id,
            }
        )
        return 0
    _print(result)
    if demand is not None:
        print_fleet_summary(demand)
    elif profile is not None:
        note("no fleet over the profile: no option holds a seat")
    return 0


def _print(result: Recommendation) -> None:
    print(result.summary)
    rows = [
        (
            o.policy,
            o.sharing.label + (" (derived)" if o.derived else ""),
            o.seats,
            o.seats_per_instance if o.per_card > 1 else "",
            "-"
            if o.at_cap is None or o.at_cap.e2e_latency_ms is None
            else f"{o.at_cap.e2e_latency_ms:.1f}"
            + (" (low confidence)" if o.at_cap.low_confidence else ""),
            "-" if o.at_cap is None else f"{o.at_cap.min_fps:.1f}",
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
    if result.measure_next is not None:
        print(f"measure batch {result.measure_next} next, relative to {result.measure_next_basis}")
    if result.fleet is not None:
        f = result.fleet.as_dict()
        if f["gpus"] is not None:
            print(
                f"fleet: {f['gpus']} GPUs for {f['peak_sessions']} sessions at peak with "
                f"{f['headroom']:.0%} headroom"
            )
        if f["cost_per_seat_hour"] is not None:
            share = (
                ""
                if f["card_share"] == 1
                else f", our {display.fraction(f['card_share'])} of the card"
            )
            print(f"cost: {display.money(f['cost_per_seat_hour'])} per seat-hour{share}")
    print("assumptions:")
    for sentence in result.assumptions:
        print(f"  - {sentence}")


def _print_stages(at: Any, cap: int) -> None:
    """Where the end-to-end latency goes at the cap, and how busy the CPU threads are."""
    if at.cpu is not None:
        pool = at.cpu
        wait = "-" if pool.total.wait_mean_ms is None else f"{pool.total.wait_mean_ms:.1f} ms"
        p99 = "" if pool.total.wait_p99_ms is None else f", p99 {pool.total.wait_p99_ms:.1f} ms"
        print(
            f"CPU threads at {cap} sessions: {pool.workers} busy {pool.busy_fraction:.0%}, "
            f"queue wait mean {wait}{p99}"
        )
    stages = at.stages
    if stages is None or stages.mean is None or stages.tail is None:
        return
    print(f"end-to-end latency at {cap} sessions by stage (mean / p{stages.percentile:g} tail):")
    for part in PARTS:
        mean, tail = getattr(stages.mean, part), getattr(stages.tail, part)
        print(f"  {PART_LABELS[part]:<22} {mean:8.1f} ms {tail:8.1f} ms")
    print(f"  {'total':<22} {stages.mean.total:8.1f} ms {stages.tail.total:8.1f} ms")


def _isolation(option: Any) -> str:
    from planner.sharing import ISOLATION

    iso = ISOLATION[option.sharing.mode]
    return f"{iso.memory} / {iso.fault}"
