"""``planner fit``: a whole batch curve, with its band, from a stored curve or from points."""

from __future__ import annotations

import argparse

from planner.cli.output import open_store, print_json, table
from planner.curves.curve import MAX_BATCH, Point, parse_points_option
from planner.errors import BadInput
from planner.views.curve import FitView, fit_document, fit_view

__all__ = ["fit_document", "fit_text", "register"]

DEFAULT_UPTO = 64


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "fit",
        help="fit a whole batch curve, with its band, to measured points",
        description=(
            "Fit a latency for every batch size 1..UPTO to a stored curve or to points given "
            "on the command line, with an optimistic and a pessimistic edge, leave-one-out "
            "errors against the straight-line method, and the batch size worth measuring "
            "next. Points may come in any order."
        ),
    )
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--curve", metavar="ID", help="a stored curve (see `planner curves list`)")
    source.add_argument("--points", metavar="B:MS,...", help='measured points, e.g. "1:8.0,3:20.0"')
    parser.add_argument(
        "--upto",
        default=str(DEFAULT_UPTO),
        metavar="N",
        help=f"largest batch size to predict, 1 to {MAX_BATCH} (default {DEFAULT_UPTO})",
    )
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.set_defaults(handler=fit)


def fit(args: argparse.Namespace) -> int:
    upto = _upto(args.upto)
    view = fit_view(_points(args), upto=upto)
    if args.json:
        print_json(view.document)
        return 0
    print("\n".join(fit_text(view)))
    return 0


def fit_text(view: FitView) -> list[str]:
    """The lines ``planner fit`` prints of a fit's view."""
    lines = [f"model: {view.description}", table(view.predictions.rows, view.predictions.header)]
    if view.loo is not None:
        lines.append(f"{view.loo.label.lower()} ({view.loo.help}): {view.loo.value}.")
    advice = view.measure_next
    if advice is not None:
        lines.append(
            f"{advice.label}: {advice.value} ({advice.help}; `planner recommend` gives it "
            "for a plan)"
        )
    lines.append("assumptions:")
    lines.extend(f"  - {sentence}" for sentence in view.assumptions)
    return lines


def _upto(text: str) -> int:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not value.is_integer() or not 1 <= value <= MAX_BATCH:
        raise BadInput(f"--upto {text!r} is not a whole number from 1 to {MAX_BATCH}")
    return int(value)


def _points(args: argparse.Namespace) -> tuple[Point, ...]:
    if args.points is not None:
        return parse_points_option(args.points)
    with open_store(args) as store:
        curve = store.curve(args.curve)
    return curve.points
