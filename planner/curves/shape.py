"""The shape of a batch curve between and beyond its measured points, with its band.

This module owns the numerical model behind ``planner.curves.fit``: given measured points that
have already been reconciled to a non-decreasing curve, it evaluates the central latency
and the optimistic and pessimistic edges at any batch size. Everything is vectorised over
batch sizes. The reasoning behind each rule (and the data that chose the constants) is in
``docs/design.md`` under "Curve fitting".

Model assumptions, in the order they are used:

* Measured latencies carry a relative noise below and above them (``NOISE`` each, unless
  the point reports a wider spread).
* Between two measured batches latency does not fall and the time per frame moves
  monotonically from one measured value to the other. The central estimate is the straight
  line between the two points; the band is every latency those two facts allow.
* Beyond the largest measured batch each extra frame costs about what the last measured
  step cost per frame: the central estimate continues that step, so its throughput levels
  off towards one frame per that marginal cost, a limit set by the data. Where the last
  step was nearly free (latency almost flat) that limit lies very far out, and a physical
  bound takes over: throughput never exceeds ``GAIN_CAP`` times the best measured, on the
  central estimate and on the optimistic edge alike. The optimistic edge lets the extra
  frames cost somewhat less; the pessimistic edge lets them cost somewhat more and, with
  distance, lose the remaining batching gain until an extra frame costs as much as an
  average frame at the largest measured batch ("no further batching gain"). How much
  less, how much more and how fast is ``BAND``, the constants chosen on published curves.
* When time per frame rose over the last step (batching hurts, e.g. cache spill), the
  pessimistic edge keeps it rising at the same rate (a power law in batch size) and the
  optimistic edge lets it stop rising.
* Below the smallest measured batch the same rules run downwards.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

FloatArray = NDArray[np.float64]

# Relative noise of a measured median latency when the point reports no wider spread. A
# median of tens of timed calls repeats to well under 1% (the reference laptop repeated
# batch 1 within 0.5% after minutes of load); 0.75% keeps the band at a measured point
# under 2% wide.
NOISE = 0.0075
# Throughput never exceeds this multiple of the best measured, on the central estimate or
# the optimistic edge. It is a physical bound, not a fitted one: the largest gain beyond a
# measured range in published batch curves is ~12x (LLM decode, EfficientNet-B0), so 16x
# leaves the data room to decide, and it binds only where the last measured step was
# nearly free, where continuing that step would promise unbounded throughput.
GAIN_CAP = 16.0
# Latency on a throughput cap is raised by this relative hair so that rounding can never
# put the computed throughput above the cap.
_ROUNDING = 1e-12
# With a single point the central estimate assumes latency grows as batch**ONE_POINT_SLOPE:
# predicting every other published point from the first alone (under GAIN_CAP), 0.15 and
# 0.2 did best (median error 0.42-0.43, against 0.46 for 0.25 and 0.51 for flat latency);
# 0.2 is the more cautious of the two.
ONE_POINT_SLOPE = 0.2


@dataclass(frozen=True)
class BandRules:
    """How far the band reaches beyond the measured range: the constants chosen on data.

    ``marginal_low`` is how much less an extra frame beyond the measured range may cost
    than the last measured step (optimistic edge): ``base + extra * (1 - e)``, where ``e`` is
    the last step's cost per frame over the average time per frame (1 when the card is
    saturated, 0 while latency is flat); an unsaturated card's marginal cost is still
    settling, so it gets more room. ``marginal_high`` is how much more it may cost on the
    pessimistic edge before any lost batching gain. ``fade`` is how fast the pessimistic edge
    gives up the remaining batching gain: the fraction lost after d doublings beyond the
    last measurement is ``1 - 2**(-fade * d)``.

    ``BAND`` holds the values chosen on published curves (figures in
    ``docs/performance.md``). ``planner.bench.fit_eval.tune`` states that choice as a rule (the
    widest margin on both targets over a grid), so that it can be repeated on part of the
    curves and judged on the rest.
    """

    marginal_low: tuple[float, float]
    marginal_high: float
    fade: float


BAND = BandRules(marginal_low=(0.05, 0.4), marginal_high=0.15, fade=0.45)


@dataclass(frozen=True, eq=False)
class Shape:
    """Reconciled measured points and what the model needs to evaluate them.

    ``batches`` and ``latencies`` are sorted, with latencies non-decreasing; ``noise_low``
    and ``noise_high`` are each point's relative noise below and above its latency;
    ``best_per_frame`` is the lowest measured time per frame (ms), which sets the
    throughput cap; ``rules`` says how far the band reaches beyond the measured range.
    """

    batches: FloatArray
    latencies: FloatArray
    noise_low: FloatArray
    noise_high: FloatArray
    best_per_frame: float
    rules: BandRules = BAND

    def evaluate(self, batch: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray]:
        """Central, optimistic (low) and pessimistic (high) latency at each batch size."""
        b = np.asarray(batch, dtype=np.float64)
        flat = b.ravel()
        central = np.empty_like(flat)
        low = np.empty_like(flat)
        high = np.empty_like(flat)
        first, last = self.batches[0], self.batches[-1]
        above = flat > last
        below = flat < first
        inside = ~(above | below)
        if len(self.batches) == 1:
            parts = [(above | inside, self._one_point_up), (below, self._one_point_down)]
        else:
            parts = [(inside, self._inside), (above, self._above), (below, self._below)]
        for mask, rule in parts:
            if mask.any():
                c, lo, hi = rule(flat[mask])
                central[mask] = c
                low[mask] = np.minimum(lo, c)
                high[mask] = np.maximum(hi, c)
        shape = b.shape
        return central.reshape(shape), low.reshape(shape), high.reshape(shape)

    def _cap(self, b: FloatArray, gain: float) -> FloatArray:
        """Latency at which throughput is ``gain`` times the best measured throughput."""
        return b * self.best_per_frame / gain * (1 + _ROUNDING)

    # -- between measured points --------------------------------------------------------

    def _knot_band(self) -> tuple[FloatArray, FloatArray]:
        """The band at the measured points, made monotone across neighbours."""
        low = np.maximum.accumulate(self.latencies * (1 - self.noise_low))
        high = np.minimum.accumulate((self.latencies * (1 + self.noise_high))[::-1])[::-1]
        return low, high

    def _inside(self, b: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray]:
        xs, ys = self.batches, self.latencies
        central = np.interp(b, xs, ys)
        j = np.clip(np.searchsorted(xs, b, side="right") - 1, 0, len(xs) - 2)
        b0, b1, y0, y1 = xs[j], xs[j + 1], ys[j], ys[j + 1]
        # Time per frame moves monotonically between its two measured values, and latency
        # does not fall: a parallelogram in (batch, latency) that closes at both points.
        from_left = y0 * b / b0
        from_right = y1 * b / b1
        base_low = np.maximum(y0, np.minimum(from_left, from_right))
        base_high = np.minimum(y1, np.maximum(from_left, from_right))
        under = np.maximum(self.noise_low[j], self.noise_low[j + 1])
        over = np.maximum(self.noise_high[j], self.noise_high[j + 1])
        knot_low, knot_high = self._knot_band()
        low = np.clip(base_low * (1 - under), knot_low[j], knot_low[j + 1])
        high = np.clip(base_high * (1 + over), knot_high[j], knot_high[j + 1])
        exact = np.isin(b, xs)
        if exact.any():
            k = np.searchsorted(xs, b[exact])
            low[exact], high[exact] = knot_low[k], knot_high[k]
        return central, low, high

    # -- beyond the largest measured point ----------------------------------------------

    def _step(self, i: int, k: int) -> tuple[float, float, float]:
        """Marginal cost per frame of the step between points i and k, and its noise."""
        xs, ys = self.batches, self.latencies
        tol = (self.noise_low + self.noise_high) / 2
        width = abs(xs[k] - xs[i])
        slope = max((ys[k] - ys[i]) / (xs[k] - xs[i]), 0.0)
        noise = (tol[i] * ys[i] + tol[k] * ys[k]) / width
        log_slope = float(np.log(ys[k] / ys[i]) / np.log(xs[k] / xs[i]))
        return float(slope), float(noise), log_slope

    def _above(self, b: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray]:
        xs, ys = self.batches, self.latencies
        bn, yn = xs[-1], ys[-1]
        slope, noise, log_slope = self._step(-2, -1)
        average = yn / bn
        extra = b - bn
        doublings = np.log2(b / bn)
        rules = self.rules
        central = yn + extra * slope
        if slope <= average:
            low_cost, high_cost = _marginal_range(slope, noise, average, doublings, rules)
            low = yn + extra * low_cost
            high = yn + extra * high_cost
        else:
            # Batching hurts: time per frame rose over the last step. Pessimistic: it keeps
            # rising at the same log-log rate; optimistic: it stops rising.
            high = np.maximum(
                yn * (b / bn) ** log_slope,
                yn + extra * (slope * (1 + rules.marginal_high) + noise),
            )
            no_more_rise = yn * b / bn
            low = np.minimum(
                no_more_rise, yn + extra * max(slope * (1 - rules.marginal_low[0]) - noise, 0)
            )
        central = np.maximum(central, self._cap(b, GAIN_CAP))
        low = np.maximum(low * (1 - self.noise_low[-1]), self._cap(b, GAIN_CAP))
        # Never below the band at the last measured point, so the edge cannot step down.
        low = np.maximum(low, self._knot_band()[0][-1])
        return central, low, high * (1 + self.noise_high[-1])

    # -- below the smallest measured point ----------------------------------------------

    def _below(self, b: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray]:
        xs, ys = self.batches, self.latencies
        b0, y0 = xs[0], ys[0]
        slope, noise, log_slope = self._step(0, 1)
        average = y0 / b0
        fewer = b0 - b
        doublings = np.log2(b0 / b)
        proportional = y0 * b / b0
        if slope <= average:
            central = y0 - fewer * slope
            # Going down, more cost per removed frame means lower latency: the edges swap.
            low_cost, high_cost = _marginal_range(slope, noise, average, doublings, self.rules)
            low = y0 - fewer * high_cost
            high = y0 - fewer * low_cost
        else:
            # Time per frame falls towards smaller batches: a power law between the line
            # (optimistic) and a constant time per frame (pessimistic).
            central = y0 * (b / b0) ** log_slope
            low = np.minimum(central, y0 - fewer * (slope * (1 + self.rules.marginal_high) + noise))
            high = proportional
        # Keep the optimistic edge physical: a frame never costs less than half the time per
        # frame measured at the smallest batch.
        low = np.maximum(low, 0.5 * proportional)
        high = np.minimum(np.minimum(high, y0) * (1 + self.noise_high[0]), self._knot_band()[1][0])
        return central, low * (1 - self.noise_low[0]), high

    # -- a single measured point ----------------------------------------------------------

    def _one_point_up(self, b: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray]:
        b0, y0 = self.batches[0], self.latencies[0]
        ratio = b / b0
        central = np.maximum(y0 * ratio**ONE_POINT_SLOPE, self._cap(b, GAIN_CAP))
        low = np.maximum(y0 * (1 - self.noise_low[0]), self._cap(b, GAIN_CAP))
        high = y0 * ratio * (1 + self.noise_high[0])
        return central, low, high

    def _one_point_down(self, b: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray]:
        b0, y0 = self.batches[0], self.latencies[0]
        ratio = b / b0
        low = y0 * ratio * (1 - self.noise_low[0])
        return y0 * ratio**ONE_POINT_SLOPE, low, y0 * (1 + self.noise_high[0])


def _marginal_range(
    slope: float, noise: float, average: float, doublings: FloatArray, rules: BandRules
) -> tuple[float, FloatArray]:
    """Optimistic and pessimistic cost per extra frame, d doublings from the last point.

    ``slope`` is the last measured marginal cost, ``average`` the time per frame at the last
    point (the cost of an extra frame if batching gains nothing more).
    """
    saturation = min(slope / average, 1.0) if average > 0 else 1.0
    unsettled = 1.0 - saturation
    base, unsettled_extra = rules.marginal_low
    low = max(slope * (1 - base - unsettled_extra * unsettled) - noise, 0.0)
    near = slope * (1 + rules.marginal_high) + noise
    faded = 1.0 - 2.0 ** (-rules.fade * doublings)
    high = near + faded * max(average - near, 0.0)
    return low, high
