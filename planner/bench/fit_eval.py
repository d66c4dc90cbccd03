"""Judging a curve fit on published batch curves: hide points, predict them, compare.

A *development set* is a JSON list of curves, each with its provenance and its points as
``[batch, latency_ms]`` pairs (see ``tests/data/fit_devset/curves.json``). ``evaluate``
hides points according to each protocol, predicts them from the rest with the fit and with
the straight-line method, and reports per protocol: the median relative error of both, how
often the fit's band contained the hidden point, and the median relative band width
(``(pessimistic - optimistic) / central``).

The band's constants (``planner.curves.shape.BandRules``) are chosen on such curves by ``tune``.
Because a choice judged on the curves it was made on flatters itself, ``halves`` splits the
set at random into a tuning half and a judging half, tunes on the one and judges on the
other, and averages the judged figures over many splits.

Run ``python -m planner.bench.fit_eval FILE`` to print the table that ``docs/performance.md``
quotes; ``--halves`` adds the table over random halves, ``--tune`` prints the rules ``tune``
chooses on the whole file.
"""

from __future__ import annotations

import argparse
import functools
import itertools
import json
import math
import sys
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from planner.bench.registry import Figures, best_of, section
from planner.curves.curve import Point
from planner.curves.fit import FittedCurve, fit_curve, straight_line
from planner.curves.shape import BandRules

Split = tuple[tuple[Point, ...], tuple[Point, ...]]

PROTOCOLS: dict[str, str] = {
    "next-two": "the first two points predict the next two",
    "next-two-anywhere": "every two neighbouring points predict the two after them",
    "first-half": "the first half (n // 2 points, at least 2) predicts the rest",
    "first-half-up": "the first half rounded up (ceil(n / 2), at least 2) predicts the rest",
    "leave-one-out": "every point is predicted from all the others",
}
# The protocols that predict beyond the measured range, where the band's rules apply and
# its targets are judged.
EXTRAPOLATION: tuple[str, ...] = ("next-two", "first-half", "first-half-up")
# The targets: the band contains at least COVERAGE of hidden points at a median relative
# width of at most WIDTH (and the central estimate is at least as accurate as the line).
COVERAGE = 0.80
WIDTH = 0.50
# The rules ``tune`` chooses among: the band constants on a grid around physically sensible
# values (how much cheaper or dearer an extra frame may be, how fast the gain fades).
TUNING_GRID: tuple[BandRules, ...] = tuple(
    BandRules(marginal_low=(base, unsettled), marginal_high=high, fade=fade)
    for fade, high, base, unsettled in itertools.product(
        (0.3, 0.35, 0.4, 0.45, 0.5, 0.6), (0.1, 0.15, 0.2), (0.0, 0.05, 0.1), (0.3, 0.4, 0.5)
    )
)


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


@dataclass(frozen=True)
class Hidden:
    """What one protocol made of one curve: per hidden point, the fit's and the line's
    relative errors, whether the band contained it, and the band's relative width."""

    fit_error: tuple[float, ...]
    straight_line_error: tuple[float, ...]
    inside: tuple[bool, ...]
    width: tuple[float, ...]


Fit = Callable[[Sequence[Point]], FittedCurve]


def hide(protocol: str, curve: DevCurve, fit: Fit = fit_curve) -> Hidden:
    """Hide one curve's points as ``protocol`` says and predict them from the rest."""
    fit_err: list[float] = []
    line_err: list[float] = []
    inside: list[bool] = []
    width: list[float] = []
    for known, hidden in splits(protocol, curve.points):
        b = np.array([p.batch for p in hidden], dtype=np.float64)
        truth = np.array([p.latency_ms for p in hidden])
        central, low, high = fit(known).band(b)
        line = straight_line(known)(b)
        fit_err.extend(float(e) for e in np.abs(central - truth) / truth)
        line_err.extend(float(e) for e in np.abs(line - truth) / truth)
        inside.extend(bool(i) for i in (low <= truth) & (truth <= high))
        width.extend(float(w) for w in (high - low) / central)
    return Hidden(tuple(fit_err), tuple(line_err), tuple(inside), tuple(width))


def summarise(protocol: str, hidden: Sequence[Hidden]) -> ProtocolResult:
    """One protocol's figures over the curves whose ``hide`` results are given."""
    fit_err = [e for h in hidden for e in h.fit_error]
    line_err = [e for h in hidden for e in h.straight_line_error]
    return ProtocolResult(
        protocol=protocol,
        curves=sum(bool(h.fit_error) for h in hidden),
        hidden=len(fit_err),
        fit_error=float(np.median(fit_err)),
        straight_line_error=float(np.median(line_err)),
        fit_mean_error=float(np.mean(fit_err)),
        straight_line_mean_error=float(np.mean(line_err)),
        inside=float(np.mean([i for h in hidden for i in h.inside])),
        width=float(np.median([w for h in hidden for w in h.width])),
    )


def evaluate(
    curves: Sequence[DevCurve],
    protocols: Sequence[str] = tuple(PROTOCOLS),
    fit: Fit = fit_curve,
) -> dict[str, ProtocolResult]:
    """Hide points per protocol, predict them, and summarise fit against straight line."""
    return {p: summarise(p, [hide(p, c, fit) for c in curves]) for p in protocols}


def margin(results: dict[str, ProtocolResult]) -> float:
    """How far the band clears its targets on the extrapolation protocols: the smallest of
    ``inside - COVERAGE`` and ``WIDTH - width`` over them (negative: a target is missed)."""
    return min(min(results[p].inside - COVERAGE, WIDTH - results[p].width) for p in EXTRAPOLATION)


def _fit_with(rules: BandRules) -> Fit:
    return functools.partial(fit_curve, rules=rules)


def _hide_all(
    curves: Sequence[DevCurve], grid: Sequence[BandRules]
) -> dict[BandRules, dict[str, list[Hidden]]]:
    return {
        rules: {p: [hide(p, c, _fit_with(rules)) for c in curves] for p in EXTRAPOLATION}
        for rules in grid
    }


def _choose(hidden: dict[BandRules, dict[str, list[Hidden]]], which: Sequence[int]) -> BandRules:
    """The rules whose band clears its targets by most on the curves numbered ``which``
    (ties: the first in grid order)."""
    return max(
        hidden,
        key=lambda rules: margin(
            {p: summarise(p, [hidden[rules][p][i] for i in which]) for p in EXTRAPOLATION}
        ),
    )


def tune(curves: Sequence[DevCurve], grid: Sequence[BandRules] = TUNING_GRID) -> BandRules:
    """The band rules from ``grid`` that clear the targets by the widest ``margin`` on
    ``curves``: a margin on both targets rather than a fit to their edge.

    ``planner.curves.shape.BAND`` is this function's choice on the development set.
    """
    return _choose(_hide_all(curves, grid), range(len(curves)))


@dataclass(frozen=True)
class Halves:
    """Figures judged on the judging halves of random splits, averaged over the splits.

    ``results`` holds, per protocol, the mean over splits of each figure (``curves`` and
    ``hidden`` are rounded means); ``rules`` the band rules chosen on each tuning half.
    """

    results: dict[str, ProtocolResult]
    rules: tuple[BandRules, ...]
    judged: tuple[dict[str, ProtocolResult], ...]


def halves(
    curves: Sequence[DevCurve],
    count: int = 20,
    seed: int = 0,
    grid: Sequence[BandRules] = TUNING_GRID,
    protocols: Sequence[str] = tuple(PROTOCOLS),
) -> Halves:
    """Tune on one random half of ``curves``, judge on the other, ``count`` times.

    Split k shuffles the curves with ``numpy.random.default_rng(seed)`` (one generator
    for all splits, so the splits are reproducible) and tunes on the first ``n // 2``;
    the band rules are chosen on that half alone (``tune``'s criterion) and every protocol
    is judged on the rest with them. The central estimate and the straight line do not
    depend on the rules.
    """
    if count < 1:
        raise ValueError(f"count must be at least 1, not {count}")
    rng = np.random.default_rng(seed)
    tuning = _hide_all(curves, grid)
    half = len(curves) // 2
    judged_hidden: dict[BandRules, dict[str, list[Hidden]]] = {}
    chosen: list[BandRules] = []
    judged: list[dict[str, ProtocolResult]] = []
    for _ in range(count):
        order = rng.permutation(len(curves))
        rules = _choose(tuning, [int(i) for i in order[:half]])
        if rules not in judged_hidden:
            judged_hidden[rules] = {
                p: [hide(p, c, _fit_with(rules)) for c in curves] for p in protocols
            }
        judge = [int(i) for i in order[half:]]
        chosen.append(rules)
        judged.append(
            {p: summarise(p, [judged_hidden[rules][p][i] for i in judge]) for p in protocols}
        )
    return Halves(
        results={p: _mean(p, [j[p] for j in judged]) for p in protocols},
        rules=tuple(chosen),
        judged=tuple(judged),
    )


def _mean(protocol: str, results: Sequence[ProtocolResult]) -> ProtocolResult:
    def avg(name: str) -> float:
        return float(np.mean([getattr(r, name) for r in results]))

    return ProtocolResult(
        protocol=protocol,
        curves=round(avg("curves")),
        hidden=round(avg("hidden")),
        fit_error=avg("fit_error"),
        straight_line_error=avg("straight_line_error"),
        fit_mean_error=avg("fit_mean_error"),
        straight_line_mean_error=avg("straight_line_mean_error"),
        inside=avg("inside"),
        width=avg("width"),
    )


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


def _describe_rules(rules: BandRules) -> str:
    base, unsettled = rules.marginal_low
    return (
        f"marginal_low=({base:g}, {unsettled:g}), marginal_high={rules.marginal_high:g}, "
        f"fade={rules.fade:g}"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m planner.bench.fit_eval",
        description="Judge the curve fit on a development set of published batch curves.",
    )
    parser.add_argument("devset", help="development-set JSON file")
    parser.add_argument(
        "--halves",
        type=int,
        metavar="N",
        nargs="?",
        const=20,
        help="also tune on a random half and judge on the other, N times (default 20)",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the random halves")
    parser.add_argument(
        "--tune", action="store_true", help="print the band rules tuned on the whole file"
    )
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    if args.halves is not None and args.halves < 1:
        parser.error("--halves must be at least 1")
    curves = load_curves(args.devset)
    print(report(evaluate(curves)))
    if args.tune:
        print(f"\nband rules tuned on all {len(curves)} curves: {_describe_rules(tune(curves))}")
    if args.halves is not None:
        result = halves(curves, count=args.halves, seed=args.seed)
        print(
            f"\nmean over {args.halves} random halves (seed {args.seed}), band rules tuned "
            f"on the other half of each:\n"
        )
        print(report(result.results))
        print("\nrules chosen on the tuning halves:")
        for rules, times in Counter(result.rules).most_common():
            print(f"- {times} x {_describe_rules(rules)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
