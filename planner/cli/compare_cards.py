"""``planner compare-cards``: one model's curves on every card, under the same criteria."""

from __future__ import annotations

import argparse

from planner.cli.output import (
    csv_list,
    link_values,
    note,
    open_store,
    option,
    option_name,
    print_json,
    table,
)
from planner.cli.planning import add_queue_options, flag_spelling
from planner.errors import BadInput
from planner.plan.compare_cards import compare_cards, model_of, settle
from planner.plan.params import QUEUE_SETTINGS, CompareParams, queue_conflicts
from planner.views.cards import card_comparison_view
from planner.views.choices import POLICIES

OPTIONS = (
    "budget_ms", "percentile", "min_fps", "max_overwritten", "overhead_ms", "policies",
    "seeds", "duration_s", "max_sessions", "peak_sessions", "headroom", "queue",
    *QUEUE_SETTINGS,
)  # fmt: skip


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "compare-cards",
        help="one model's seat caps and cost per seat on every card",
        description=(
            "Plan every stored whole-card curve of one model with the same criteria, each on "
            "its own card (exclusive): seats per card, latency at the cap, cost per seat with "
            "the card's stored price, GPUs for a peak, and the batch size to measure next. "
            "The Compare page of the dashboard shows the same."
        ),
    )
    parser.add_argument("--model", help="the model (default: the default plan's model)")
    parser.add_argument("--cards", help="comma-separated cards (default: every card)")
    parser.add_argument("--precision", help="only curves of this precision, e.g. fp16")
    parser.add_argument("--resolution", help="only curves of this input size, e.g. 512x288")
    option(parser, "budget_ms", "latency budget, ms end to end")
    option(parser, "percentile", "percentile of the budget")
    option(parser, "min_fps", "slowest session's fps floor")
    parser.add_argument("--max-overwritten", help="largest overwritten fraction, e.g. 0.05")
    option(parser, "overhead_ms", "per-frame time outside the GPU, ms")
    parser.add_argument(
        "--policies", help=f"comma-separated, from {', '.join(POLICIES)} (default: all)"
    )
    option(parser, "seeds", "phase seeds per session count")
    option(parser, "duration_s", "simulated seconds per run")
    option(parser, "max_sessions", "largest session count")
    parser.add_argument("--peak-sessions", help="peak concurrent sessions, for the fleet size")
    option(parser, "headroom", "fleet headroom fraction")
    add_queue_options(parser)
    parser.add_argument(
        "--include-flagged",
        action="store_true",
        help="compare curves whose measurement was flagged too (a failed drift check)",
    )
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.set_defaults(handler=run)


def compare_params(args: argparse.Namespace) -> CompareParams:
    values = link_values(args, (*OPTIONS, "model", "precision", "resolution"))
    if args.cards:
        values["cards"] = tuple(csv_list(args.cards))
    values["flagged"] = bool(getattr(args, "include_flagged", False))
    queue = queue_conflicts(values, flag_spelling)  # in the options' own words
    if queue:
        raise BadInput([message for _, message in queue])
    try:
        return CompareParams(**values)
    except BadInput as exc:
        raise BadInput([option_name(p) for p in exc.problems]) from None


def run(args: argparse.Namespace) -> int:
    params = compare_params(args)
    with open_store(args) as store:
        settled, ignored = settle(store, params)
        if ignored:
            raise BadInput([m.replace("ignored ", "no curve to compare: ", 1) for m in ignored])
        model = model_of(store, settled)
        if not args.json:
            note(f"comparing {model} on every card it has a curve for ...")
        plans = compare_cards(
            store,
            settled,
            progress=lambda done, total: None if args.json else note(f"  {done}/{total}"),
        )
    if args.json:
        print_json({"model": model, "curves": [plan.as_dict() for plan in plans]})
        return 0
    shown = card_comparison_view(plans, settled).every_curve
    print(table(shown.rows, shown.header))
    for plan in plans:
        for problem in plan.problems:
            note(f"{plan.curve.card}: {problem}")
    return 0
