"""``planner bench --only published``: the planner against published multi-stream results
(``planner.validate.published``), the margin of the uncalibrated range they give, and what
that margin costs on the built-in curves.

Per case: the curve given, the predicted cap with its uncalibrated range (the margin each
system is judged with was fitted on the other systems only), the published cap and the
error. Then the median |error|, the leave-one-system-out coverage, the margin derived and
the one the library ships, and the seats the shipped margin takes off the low end of each
built-in curve's default plan.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable

from planner import display, limits
from planner.bench.registry import Figures, section
from planner.curves.fit import fit_curve
from planner.plan.margin import widened
from planner.plan.recommend import recommend
from planner.plan.request import Request
from planner.validate.published import Predicted, derive, load, predict_all

COST_SEEDS = 2
COST_DURATION_S = 10.0
"""The built-in curves' plans are the default plan with fewer draws, to keep the bench
short: the margin's cost is a difference of two caps of the same runs."""


@section("published")
def published(progress: Callable[[str], None]) -> Figures:
    cases = load()
    predicted = predict_all(cases, progress)
    found = derive(predicted)
    out: Figures = {}
    for p, m, verdict in zip(found.predicted, found.held_out, found.verdicts, strict=True):
        out[p.case.label] = row(p, m, verdict)
    errors = [abs(p.error) for p in predicted]
    over = sum(p.cap > p.case.streams for p in predicted)
    out["cases"] = len(predicted)
    out["systems"] = len({p.case.system_key for p in predicted})
    out["median |error|"] = display.fraction(statistics.median(errors))
    out["median error"] = display.fraction(statistics.median(p.error for p in predicted), sign=True)
    out["predicted above published"] = f"{over} of {len(predicted)}"
    out["coverage (held out)"] = (
        f"{found.verdicts.count('inside')} of {len(predicted)} "
        f"({display.fraction(found.coverage)}); misses low {found.misses_low}, "
        f"misses high {found.misses_high}"
    )
    out["width k (sd of log ratio)"] = found.k
    out["margin derived"] = round(found.m, 4)
    shipped = limits.UNCALIBRATED_MARGINS[limits.UNCALIBRATED_MARGIN]
    out[f"margin shipped (v{limits.UNCALIBRATED_MARGIN})"] = shipped
    out.update(cost(shipped, progress))
    return out


def row(p: Predicted, m: float, verdict: str) -> str:
    """One case: curve, predicted cap with its range, published cap, error, verdict."""
    (b1, l1), (b2, l2) = ((q.batch, q.latency_ms) for q in p.case.points)
    low, high = p.range_with(m)
    return (
        f"curve {b1}:{l1:.3f} ms, {b2}:{l2:.2f} ms; predicted {p.cap} ({low}–{high}, "
        f"m {m:.3f}); published {p.case.streams}; error {display.fraction(p.error, sign=True)}; "
        f"{verdict}"
    )


def cost(m: float, progress: Callable[[str], None]) -> Figures:
    """Seats per card the margin ``m`` takes off the low end of each built-in curve's
    default plan (its recommended option; the band's low end against the widened one)."""
    from planner.curves.imports import ImportOptions, read_files
    from planner.paths import measurements_dir

    files = sorted((measurements_dir() / "curves").glob("*.json"))
    curves = read_files([(f.name, f.read_bytes()) for f in files], ImportOptions()).curves
    out: Figures = {}
    for curve in curves:
        progress(f"published: margin cost on {curve.label}")
        request = Request(
            curve=fit_curve(curve.points), seeds=COST_SEEDS, duration_s=COST_DURATION_S
        )
        best = recommend(request).recommended
        if best is None:
            out[f"cost {curve.label}"] = "no seat on the default plan"
            continue
        wide = widened(best, m)
        out[f"cost {curve.label}"] = (
            f"{best.label}: {best.seats} -> {wide.seats} seats per card, "
            f"{(best.cap_low - wide.cap_low) * best.per_card} off the low end"
        )
    return out
