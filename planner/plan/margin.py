"""The uncalibrated range (SPEC §6.2): until a load test calibrates the curve, a cap's
range also carries the model's own error, measured on published results and load tests.

A curve's band covers what its points leave open, not what the model of the serving path
leaves out (host costs, a server's own batching, a client's timing). Across 50 published
multi-stream results and the repository's own load tests the planner's cap was above the
measured one in most cases, by up to 44% on the published ones (``docs/accuracy.md``), so
an uncalibrated range's low end becomes ``min(band low, floor(m x cap))`` with m from
``planner.limits.UNCALIBRATED_MARGINS`` (the version the request pins); its
likely value and high end stay the band's. The band's own caps stay on the option
(``band_cap_low``, ``band_cap_high``). A calibrated plan, or one that pins no margin (a
link or saved plan from before it), keeps the band's range.

The margin is applied where an option's range is formed, after the search: it changes no
simulation, only the low end every ``_low`` figure, the ranking and dominance
(``planner.plan.pareto``) read.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

from planner import display, limits
from planner.curves.measure_next import Advice
from planner.plan.outcomes import Option
from planner.plan.request import Request

LOAD_TEST = "planner loadtest"
"""How a user narrows an uncalibrated range: a load test, which calibrates the curve."""


def factor(request: Request) -> float | None:
    """The factor m an uncalibrated plan's low ends may fall to; None where no margin
    applies (the plan is calibrated, or pins no margin)."""
    if request.calibration is not None or request.margin is None:
        return None
    return limits.UNCALIBRATED_MARGINS[request.margin]


def low_end(cap: int, band_low: int, m: float) -> int:
    """The uncalibrated range's low end: ``min(band_low, floor(m x cap))``."""
    return min(band_low, math.floor(m * cap))


def widened(option: Option, m: float) -> Option:
    """``option`` with its low end widened by the margin ``m`` (its band's caps kept as
    ``band_low``/``band_high``). An option that holds no seat is left as it is."""
    if option.cap < 1:
        return option
    return replace(
        option,
        cap_low=low_end(option.cap, option.cap_low, m),
        margin=m,
        band_low=option.cap_low,
        band_high=option.cap_high,
    )


def widen(request: Request, options: Sequence[Option]) -> list[Option]:
    """Every option of a recommendation with the request's margin applied (unchanged
    where none applies)."""
    m = factor(request)
    return list(options) if m is None else [widened(o, m) for o in options]


def advice(option: Option, batch: Advice) -> Advice:
    """What to measure next: where the margin, not the band, sets the low end of the
    range, a load test (no batch size narrows it); else the batch advice as it is."""
    if not option.margin_sets_low:
        return batch
    return Advice(None, load_test_basis(option))


def load_test_basis(option: Option) -> str:
    """Why a load test, not a batch size, is what to measure next."""
    return (
        f"the model's own error, which sets the low end ({option.cap_low}) below the band's "
        f"({option.band_cap_low}) until a load test calibrates the curve; no batch size "
        "narrows that"
    )


def uncalibrated_note(option: Option) -> str:
    """The headline's note on an uncalibrated range and how to narrow it."""
    return f"uncalibrated: measure with {LOAD_TEST} to narrow the range"


def low_end_reason(option: Option) -> str:
    """Why the low end is where the margin puts it (no full stop)."""
    m = option.margin or 1.0
    return (
        f"the model's error on {corpus(m)} puts the low end at "
        f"{display.fraction(m)} of the likely count until then ({display.fraction(m)} of "
        f"{option.cap}, rounded down)"
    )


def per_request_note(per_request_ms: float) -> str:
    """What an uncalibrated plan assumes of its curve's per-request cost: on a batch's
    path for the likely count and the low end, off it for the high end
    (``planner.plan.request.model_table``)."""
    return (
        f"Each request of a batch adds {display.ms(per_request_ms)} to the batch's time (the "
        "server's per-request cost) for the likely count and the low end; the high end "
        "takes that cost as overlapping the batch before, as it can when requests arrive "
        f"spread out. A load test's calibration ({LOAD_TEST}) settles how much of it a "
        "batch waits for."
    )


def corpus(m: float) -> str:
    """What the margin ``m`` was measured on, in words: version 1 on published results
    alone, later versions on the repository's own load tests too."""
    if m == limits.UNCALIBRATED_MARGINS[1]:
        return "published multi-stream results"
    return "published multi-stream results and load tests of real servers"
