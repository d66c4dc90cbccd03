"""``planner recommend``: the seat cap per policy and sharing mode under a latency budget."""

from __future__ import annotations

import argparse
from typing import Any

from planner.cli.output import add_curve_source, csv_list, note, open_store, print_json, table
from planner.curve import parse_points_option
from planner.errors import BadInput
from planner.links import PlanParams
from planner.modes import parse_duties
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
    """The options of a plan (shared with ``planner link``)."""
    parser.add_argument("--card", help="the card (default: the stored curve's card)")
    parser.add_argument("--budget-ms", default="50", help="latency budget, ms end to end (50)")
    parser.add_argument("--percentile", default="99", help="percentile of the budget (99)")
    parser.add_argument("--min-fps", default="28.5", help="slowest session's fps floor (28.5)")
    parser.add_argument("--max-overwritten", help="largest overwritten fraction, e.g. 0.05")
    parser.add_argument("--overhead-ms", default="0", help="per-frame time outside the GPU (0)")
    parser.add_argument(
        "--policies", help=f"comma-separated, from {', '.join(POLICIES)} (default: all)"
    )
    parser.add_argument(
        "--modes",
        help=f"comma-separated, from {', '.join(MODES)} (default: exclusive, plus each mode "
        "whose parameters are given)",
    )
    parser.add_argument("--cotenants", help="time-slicing: co-tenant duty cycles, e.g. 0.9,0.9")
    parser.add_argument("--busy-period-ms", default="50", help="co-tenants' mean busy period")
    parser.add_argument("--mps-share", help="MPS: our compute share in percent, e.g. 50")
    parser.add_argument("--mig-profile", help="MIG: a profile of the card, e.g. 3g.40gb")
    add_worker_options(parser)
    parser.add_argument("--seeds", default="8", help="phase seeds per session count (8)")
    parser.add_argument("--duration-s", default="30", help="simulated seconds per run (30)")
    parser.add_argument("--max-sessions", default="64", help="largest session count (64)")
    parser.add_argument("--peak-sessions", help="peak concurrent sessions, for the fleet size")
    parser.add_argument("--headroom", default="0.2", help="fleet headroom fraction (0.2)")
    parser.add_argument("--price-per-hour", help="card price, USD per hour (default: stored)")


def add_worker_options(parser: argparse.ArgumentParser) -> None:
    """The worker beyond the GPU and the memory the card leaves it (SPEC §5.1), shared by
    ``simulate``, ``recommend`` and ``link``."""
    parser.add_argument(
        "--network-ms", default="0", help="one-way network delay, ms; crossed both ways (0)"
    )
    parser.add_argument(
        "--pre-ms", default="0", help="CPU work per frame before the GPU (decode, resize), ms (0)"
    )
    parser.add_argument("--post-ms", default="0", help="CPU work per frame after the GPU, ms (0)")
    parser.add_argument(
        "--cpu-workers",
        default="0",
        help="CPU threads doing the pre and post work (0 = unlimited: the stages only delay)",
    )
    parser.add_argument(
        "--cotenant-memory-mb",
        help="time-slicing: GPU memory each co-tenant uses, MB (one for all or one per co-tenant)",
    )
    parser.add_argument("--mps-memory-mb", help="MPS: our client's GPU memory limit, MB")


def plan_params(args: argparse.Namespace) -> PlanParams:
    """Validated plan parameters from the options (BadInput lists every problem)."""
    values: dict[str, Any] = {
        "budget_ms": _float(args.budget_ms),
        "percentile": _float(args.percentile),
        "min_fps": _float(args.min_fps),
        "overhead_ms": _float(args.overhead_ms),
        "busy_period_ms": _float(args.busy_period_ms),
        "seeds": _whole(args.seeds),
        "duration_s": _float(args.duration_s),
        "max_sessions": _whole(args.max_sessions),
        "headroom": _float(args.headroom),
        "network_ms": _float(args.network_ms),
        "pre_ms": _float(args.pre_ms),
        "post_ms": _float(args.post_ms),
        "cpu_workers": _whole(args.cpu_workers),
    }
    optional = {
        "max_overwritten": _float,
        "mps_share": _float,
        "peak_sessions": _whole,
        "price_per_hour": _float,
        "mps_memory_mb": _float,
    }
    for name, parse in optional.items():
        text = getattr(args, name)
        if text is not None:
            values[name] = parse(text)
    if args.policies:
        values["policies"] = tuple(csv_list(args.policies))
    if args.modes:
        values["modes"] = tuple(csv_list(args.modes))
    if args.cotenants:
        values["cotenants"] = parse_duties(args.cotenants)
    if args.cotenant_memory_mb:
        values["cotenant_memory_mb"] = args.cotenant_memory_mb  # PlanParams checks each
    if args.mig_profile:
        values["mig_profile"] = args.mig_profile.strip().lower()
    if args.points is not None:
        values["points"] = parse_points_option(args.points)
        if args.card:
            values["card"] = args.card
    else:
        values["curve"] = args.curve
    try:
        return PlanParams(**values)
    except BadInput as exc:
        raise BadInput([_option_name(p) for p in exc.problems]) from None


def _option_name(problem: str) -> str:
    """``budget_ms: ...`` reads ``--budget-ms: ...`` on the command line."""
    name, sep, rest = problem.partition(": ")
    return f"--{name.replace('_', '-')}: {rest}" if sep and name.isidentifier() else problem


def _float(text: str) -> Any:
    try:
        return float(text)
    except ValueError:
        return text  # PlanParams reports it with the parameter's name


def _whole(text: str) -> Any:
    try:
        value = float(text)
    except ValueError:
        return text
    return int(value) if value.is_integer() else value


def run(args: argparse.Namespace) -> int:
    params = plan_params(args)
    with open_store(args) as store:
        if args.card and args.curve:
            stored = store.curve(args.curve)
            if stored.card.lower() != args.card.strip().lower():
                raise BadInput(
                    f"--card {args.card} differs from the stored curve's card {stored.card}"
                )
        inputs = plan_inputs(params, store)
    if not args.json:
        note(f"curve: {inputs.curve.label} ({inputs.curve.id}); {inputs.fitted.description}")
    result = recommend(inputs.request)
    if args.json:
        print_json(result.as_dict())
        return 0
    _print(result)
    return 0


def _print(result: Recommendation) -> None:
    print(result.summary)
    rows = [
        (
            o.policy,
            o.sharing.label,
            o.seats,
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
        table(rows, ("policy", "sharing", "seats", f"{pct} ms at cap", "min fps at cap",
                     "isolation (memory/fault)", "extrapolated"))
    )  # fmt: skip
    print("why the next seat fails:")
    for o in result.options:
        print(f"  {o.policy}, {o.sharing.label}: {o.binding_constraint}")
    best = result.recommended
    if best is not None and best.at_cap is not None:
        _print_stages(best.at_cap, best.cap)
    if result.measure_next is not None:
        print(f"measure batch {result.measure_next} next: it would narrow the range the most")
    if result.fleet is not None:
        f = result.fleet.as_dict()
        if f["gpus"] is not None:
            print(
                f"fleet: {f['gpus']} GPUs for {f['peak_sessions']} sessions at peak with "
                f"{f['headroom']:.0%} headroom"
            )
        if f["cost_per_seat_hour"] is not None:
            print(f"cost: ${f['cost_per_seat_hour']:.3f} per seat-hour")
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
