"""``planner bench``: performance figures measured against a reference in one run."""

from __future__ import annotations

import argparse
from typing import Any

from planner.bench.registry import run
from planner.cli.output import csv_list, note, print_json


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "bench",
        help="measure the planner's speed against its references",
        description=(
            "Measure the fast paths of the planner against a reference in the same run and "
            "print the figures and ratios. First-call compile or warm-up time is reported "
            "on its own line, never folded into the figures."
        ),
    )
    parser.add_argument("--only", help="comma-separated sections to run (default: all)")
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.set_defaults(handler=bench)


def bench(args: argparse.Namespace) -> int:
    results = run(csv_list(args.only) if args.only else None, progress=note)
    if args.json:
        print_json(results)
        return 0
    for name, figures in results.items():
        print(f"[{name}]")
        for key, value in figures.items():
            print(f"  {key:28} {_fmt(value)}")
    return 0


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)
