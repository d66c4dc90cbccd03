"""``planner compare-plans``: two saved plans side by side."""

from __future__ import annotations

import argparse

from planner.cli.output import note, open_store, print_json, table
from planner.plan.compare_plans import compare_plans, saved_plan


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "compare-plans",
        help="two saved plans side by side: what differs, seats, latency, GPUs, cost",
        description=(
            "Plan two saved plans (ids from the dashboard's Save plan or `planner link "
            "--save`) and set them side by side: the inputs that differ, then seats per card, "
            "latency at the cap, GPUs for the peak or the demand profile, and cost."
        ),
    )
    parser.add_argument("a", metavar="A", help="the first saved plan's id")
    parser.add_argument("b", metavar="B", help="the second saved plan's id")
    parser.add_argument(
        "--all", action="store_true", help="list every input, not only those that differ"
    )
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    with open_store(args) as store:
        a_id, b_id = args.a.strip().lower(), args.b.strip().lower()
        a, b = saved_plan(store, a_id), saved_plan(store, b_id)
        if not args.json:
            note(f"planning {a_id} and {b_id} ...")
        comparison = compare_plans(store, a, b, a_id=a_id, b_id=b_id)
    if args.json:
        print_json(comparison.as_dict())
        return 0
    rows = comparison.inputs if args.all else comparison.differing
    if rows:
        print(table(
            [(r.name, r.a or "-", r.b or "-", "*" if r.differs else "") for r in rows],
            ("input", f"A ({a_id})", f"B ({b_id})", "differs"),
        ))  # fmt: skip
    else:
        print("the two plans have the same inputs")
    print()
    print(table(
        comparison.outcome_rows(),
        ("", f"A ({a_id})", f"B ({b_id})"),
    ))  # fmt: skip
    for side in (comparison.a, comparison.b):
        for problem in side.problems:
            note(f"{side.name} ({side.plan_id}): {problem}")
    return 0
