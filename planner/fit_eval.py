"""Judging a curve fit on published batch curves: hide points, predict them, compare.

A *development set* is a JSON list of curves, each with its provenance and its points as
``[batch, latency_ms]`` pairs (see ``tests/data/fit_devset/curves.json``). ``evaluate``
hides points according to each protocol, predicts them from the rest with the fit and with
the straight-line method, and reports per protocol: the median relative error of both, how
often the fit's band contained the hidden point, and the median relative band width
(``(pessimistic - optimistic) / central``).

Run ``python -m planner.fit_eval FILE`` to print the table that ``docs/performance.md``
quotes.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from planner.bench import Figures, best_of, section
from planner.curve import Point
from planner.fit import FittedCurve, fit_curve, straight_line

Split = tuple[tuple[Point, ...], tuple[Point, ...]]

PROTOCOLS: dict[str, str] = {
    "next-two": "the first two points predict the next two",
    "next-two-anywhere": "every two neighbouring points predict the two after them",
    "first-half": "the first half (n // 2 points, at least 2) predicts the rest",
    "first-half-up": "the first half rounded up (ceil(n / 2), at least 2) predicts the rest",
    "leave-one-out": "every point is predicted from all the others",
}


@dataclass(frozen=True)
class DevCurve:
    """A published curve: its id, its points and where it came from."""

    id: str
    points: tuple[Point, ...]
    meta: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)


@dataclass(frozen=True)
class ProtocolResult:
    """How the fit and the straight line did on the points one protocol hides."""

    protocol: str
    curves: int
    hidden: int
    fit_error: float
    straight_line_error: float
    fit_mean_error: float
    straight_line_mean_error: float
    inside: float
    width: float


def load_curves(path: str | Path) -> tuple[DevCurve, ...]:
    """Curves from a development-set JSON file (a list of objects with ``id``, ``points``)."""
    raw = json.loads(Path(path).read_text(encoding="utf-8"))
    curves = []
    for entry in raw:
        points = tuple(Point(batch=int(b), latency_ms=float(ms)) for b, ms in entry["points"])
        meta = {k: v for k, v in entry.items() if k not in ("id", "points")}
        curves.append(DevCurve(id=str(entry["id"]), points=points, meta=meta))
    return tuple(curves)


def splits(protocol: str, points: Sequence[Point]) -> Iterator[Split]:
    """(known, hidden) pairs that ``protocol`` makes of one curve's sorted points."""
    pts = tuple(sorted(points, key=lambda p: p.batch))
    n = len(pts)
    if protocol == "next-two":
        if n >= 3:
            yield pts[:2], pts[2:4]
    elif protocol == "next-two-anywhere":
        for i in range(n - 2):
            yield pts[i : i + 2], pts[i + 2 : i + 4]
    elif protocol in ("first-half", "first-half-up"):
        k = n // 2 if protocol == "first-half" else math.ceil(n / 2)
        k = max(2, k)
        if n > k:
            yield pts[:k], pts[k:]
    elif protocol == "leave-one-out":
        if n >= 3:
            for i in range(n):
                yield pts[:i] + pts[i + 1 :], (pts[i],)
    else:
        raise ValueError(f"unknown protocol {protocol!r}; choose from {', '.join(PROTOCOLS)}")


def evaluate(
    curves: Sequence[DevCurve],
    protocols: Sequence[str] = tuple(PROTOCOLS),
    fit: Callable[[Sequence[Point]], FittedCurve] = fit_curve,
) -> dict[str, ProtocolResult]:
    """Hide points per protocol, predict them, and summarise fit against straight line."""
    results = {}
    for protocol in protocols:
        fit_err: list[float] = []
        line_err: list[float] = []
        inside: list[bool] = []
        width: list[float] = []
        used = 0
        for curve in curves:
            any_split = False
            for known, hidden in splits(protocol, curve.points):
                any_split = True
                b = np.array([p.batch for p in hidden], dtype=np.float64)
                truth = np.array([p.latency_ms for p in hidden])
                central, low, high = fit(known).band(b)
                line = straight_line(known)(b)
                fit_err.extend(np.abs(central - truth) / truth)
                line_err.extend(np.abs(line - truth) / truth)
                inside.extend((low <= truth) & (truth <= high))
                width.extend((high - low) / central)
            used += any_split
        results[protocol] = ProtocolResult(
            protocol=protocol,
            curves=used,
            hidden=len(fit_err),
            fit_error=float(np.median(fit_err)),
            straight_line_error=float(np.median(line_err)),
            fit_mean_error=float(np.mean(fit_err)),
            straight_line_mean_error=float(np.mean(line_err)),
            inside=float(np.mean(inside)),
            width=float(np.median(width)),
        )
    return results


def report(results: dict[str, ProtocolResult]) -> str:
    """The results as a Markdown table."""
    lines = [
        "| protocol | curves | hidden points | median error: fit | median error: straight "
        "line | mean error: fit / line | band contains hidden point | median band width |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in results.values():
        lines.append(
            f"| {r.protocol} | {r.curves} | {r.hidden} | {r.fit_error:.3f} | "
            f"{r.straight_line_error:.3f} | {r.fit_mean_error:.3f} / "
            f"{r.straight_line_mean_error:.3f} | {r.inside:.0%} | {r.width:.2f} |"
        )
    return "\n".join(lines)


# The reference laptop's 512x288 FP16 curve (SPEC 2.3): six points, one of them beyond the
# knee, so fitting it exercises interpolation and extrapolation alike.
BENCH_POINTS = tuple(
    Point(batch=b, latency_ms=ms)
    for b, ms in ((1, 9.82), (2, 20.36), (3, 32.71), (4, 46.15), (8, 103.77), (16, 221.25))
)


@section("fit")
def bench_fit(progress: Callable[[str], None]) -> Figures:
    """Fitting a curve and evaluating batch 1..64, against the straight-line method."""
    grid = np.arange(1, 65, dtype=np.float64)
    repeat = 200

    def fit_and_eval() -> None:
        fit_curve(BENCH_POINTS).band(grid)

    def line_and_eval() -> None:
        straight_line(BENCH_POINTS)(grid)

    fit_s = best_of(fit_and_eval, repeat)
    line_s = best_of(line_and_eval, repeat)
    one_point_s = best_of(lambda: fit_curve(BENCH_POINTS[:1]).band(grid), repeat)
    loo_s = best_of(lambda: fit_curve(BENCH_POINTS).loo, 20)
    progress("bench: fit: measure_next ...")
    next_s = best_of(lambda: fit_curve(BENCH_POINTS).measure_next(64), 5)
    table_4096_s = best_of(lambda: fit_curve(BENCH_POINTS).table(4096), 50)
    return {
        "fit_and_eval_ms": fit_s * 1e3,
        "straight_line_and_eval_ms": line_s * 1e3,
        "fit_over_straight_line": fit_s / line_s,
        "one_point_fit_and_eval_ms": one_point_s * 1e3,
        "fit_and_table_4096_ms": table_4096_s * 1e3,
        "leave_one_out_ms": loo_s * 1e3,
        "measure_next_64_ms": next_s * 1e3,
        "points": len(BENCH_POINTS),
    }


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        print("usage: python -m planner.fit_eval DEVSET.json", file=sys.stderr)
        return 2
    print(report(evaluate(load_curves(args[0]))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
