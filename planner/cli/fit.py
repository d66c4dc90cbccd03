"""``planner fit``: a whole batch curve, with its band, from a stored curve or from points."""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np

from planner import display
from planner.cli.output import open_store, print_json, table
from planner.curves import measure_next
from planner.curves.curve import MAX_BATCH, Point, parse_points_option
from planner.curves.fit import FittedCurve, fit_curve
from planner.errors import BadInput

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
    points = _points(args)
    fitted = fit_curve(points)
    document = fit_document(fitted, upto)
    if args.json:
        print_json(document)
        return 0
    _print(fitted, document, upto)
    return 0


def fit_document(fitted: FittedCurve, upto: int) -> dict[str, Any]:
    """What ``planner fit --json`` prints: points, model, predictions 1..upto, loo, next."""
    batches = np.arange(1, upto + 1, dtype=np.float64)
    central, low, high = fitted.band(batches)
    outside = fitted.extrapolated(batches)
    loo = fitted.loo
    advice = measure_next.for_curve(fitted)
    return {
        "points": [[p.batch, p.latency_ms] for p in fitted.points],
        "model": fitted.description,
        "predictions": [
            {
                "batch": int(b),
                "latency_ms": float(c),
                "low_ms": float(lo),
                "high_ms": float(hi),
                "extrapolated": bool(x),
            }
            for b, c, lo, hi, x in zip(batches, central, low, high, outside, strict=True)
        ],
        "loo": None if loo is None else {"fit": loo.fit, "straight_line": loo.straight_line},
        "measure_next": advice.batch,
        "measure_next_basis": advice.basis,
    }


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


def _print(fitted: FittedCurve, document: dict[str, Any], upto: int) -> None:
    measured = {p.batch for p in fitted.points}
    shown = sorted(
        {b for b in range(1, min(upto, 16) + 1)}
        | {2**k for k in range(13) if 2**k <= upto}
        | {b for b in measured if b <= upto}
        | {upto}
    )
    rows = []
    for b in shown:
        p = document["predictions"][b - 1]
        note = "measured" if b in measured else ("extrapolated" if p["extrapolated"] else "")
        fps = 1000.0 * b / p["latency_ms"]
        rows.append(
            (
                b,
                display.ms(p["latency_ms"], unit=False),
                display.ms(p["low_ms"], unit=False),
                display.ms(p["high_ms"], unit=False),
                display.fps(fps, unit=False),
                note,
            )
        )
    print(f"model: {fitted.description}")
    print(table(rows, ("batch", "latency_ms", "low_ms", "high_ms", "frames/s", "")))
    loo = document["loo"]
    if loo is not None:
        print(
            f"leave-one-out mean error: fit {display.fraction(loo['fit'])}, straight line "
            f"{display.fraction(loo['straight_line'])}"
        )
    if document["measure_next"] is not None:
        print(
            f"measure next: batch {document['measure_next']} (relative to "
            f"{document['measure_next_basis']}; `planner recommend` gives it for a plan)"
        )
    print("assumptions:")
    for sentence in fitted.assumptions:
        print(f"  - {sentence}")
