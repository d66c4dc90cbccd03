"""``planner bench --only published``: the planner against published multi-stream results
and the repository's own load tests (``planner.validate.published``), the margin of the
uncalibrated range they give, and what that margin costs on the built-in curves.

Per case: the curve given, the predicted cap with its uncalibrated range (the margin each
system is judged with was fitted on the other systems only), the published cap (or, for
the repository's own load tests, the measured one) and the error. Then the median |error|
(over all cases, the published ones and the own ones), the leave-one-system-out coverage,
the margin derived (on every case, and on the published ones only: version 1's corpus),
the one the library ships and how it judges every case, and the seats the shipped margin
takes off the low end of each built-in curve's default plan.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence

from planner import display, limits
from planner.bench.registry import Figures, section
from planner.curves.fit import fit_curve
from planner.plan.margin import widened
from planner.plan.recommend import recommend
from planner.plan.request import Request
from planner.validate.own_runs import OwnCase
from planner.validate.published import NONE_HELD, Predicted, corpus, derive, predict_all

COST_SEEDS = 2
COST_DURATION_S = 10.0
"""The built-in curves' plans are the default plan with fewer draws, to keep the bench
short: the margin's cost is a difference of two caps of the same runs."""


@section("published")
def published(progress: Callable[[str], None]) -> Figures:
    cases = corpus()
    predicted = predict_all(cases, progress)
    found = derive(predicted)
    out: Figures = {}
    for p, m, verdict in zip(found.predicted, found.held_out, found.verdicts, strict=True):
        out[p.case.label] = row(p, m, verdict)
    out["cases"] = len(predicted)
    out["systems"] = len({p.case.system_key for p in predicted})
    for name, group in (
        ("", predicted),
        (" (published)", [p for p in predicted if not isinstance(p.case, OwnCase)]),
        (" (own load tests)", [p for p in predicted if isinstance(p.case, OwnCase)]),
    ):
        out.update(errors(name, group))
    out["coverage (held out)"] = (
        f"{found.verdicts.count('inside')} of {found.judged} "
        f"({display.fraction(found.coverage)}); misses low {found.misses_low}, "
        f"misses high {found.misses_high}; held none {found.none_held} (a measured cap of 0 "
        "below the whole range, not judged by the rule)"
    )
    out["width k (sd of log ratio)"] = found.k
    out["margin derived"] = round(found.m, 4)
    published_only = derive([p for p in predicted if not isinstance(p.case, OwnCase)])
    out["margin derived, published cases only"] = round(published_only.m, 4)
    shipped = limits.UNCALIBRATED_MARGINS[limits.UNCALIBRATED_MARGIN]
    out[f"margin shipped (v{limits.UNCALIBRATED_MARGIN})"] = shipped
    verdicts = [p.judged(shipped) for p in predicted]
    out["shipped margin on every case"] = ", ".join(
        f"{verdicts.count(v)} {v}" for v in ("inside", "low", "high", NONE_HELD)
    )
    out.update(cost(shipped, progress))
    return out


def errors(name: str, group: Sequence[Predicted]) -> Figures:
    """The median error of the likely value over ``group`` (cases whose measured cap is 0
    have no relative error), and how often it lay above the published or measured cap."""
    if not group:
        return {}
    signed = [p.error for p in group if p.error is not None]
    over = sum(p.cap > p.case.streams for p in group)
    return {
        f"median |error|{name}": display.fraction(statistics.median(abs(e) for e in signed))
        if signed
        else "-",
        f"median error{name}": display.fraction(statistics.median(signed), sign=True)
        if signed
        else "-",
        f"predicted above the cap{name}": f"{over} of {len(group)}",
    }


def row(p: Predicted, m: float, verdict: str) -> str:
    """One case: curve, predicted cap with its range, published (or measured) cap, error,
    verdict."""
    curve = ", ".join(f"{q.batch}:{q.latency_ms:.3f}" for q in p.case.points) + " ms"
    if isinstance(p.case, OwnCase) and p.case.loadtest().curve.per_request_ms:
        curve += f" + {p.case.loadtest().curve.per_request_ms:.3f} ms per request"
    low, high = p.range_with(m)
    what = "measured" if isinstance(p.case, OwnCase) else "published"
    error = "-" if p.error is None else display.fraction(p.error, sign=True)
    return (
        f"curve {curve}; predicted {p.cap} ({low}–{high}, m {m:.3f}); {what} "
        f"{p.case.streams}; error {error}; {verdict}"
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
