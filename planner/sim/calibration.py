"""Calibration: what a load test of a real worker says the model leaves out (SPEC §5.2).

Model assumption. The worker's batch of b frames takes the curve's latency plus a fixed
and a per-frame extra, ``L_worker(b) = L_curve(b) + a + c * b`` with ``a, c >= 0`` (the
worker stacks inputs, copies them to the device and the outputs back, and runs Python
around the call; the curve times the model call alone), and each frame spends ``d`` ms
more outside the device than the model says (late arrivals, handing frames between
threads), applied as an added per-frame overhead. ``c`` is the per-request cost of a
batch as the load test measured it (the curve's own ``per_request_ms``, which a user may
give, is the same quantity: a calibrated plan takes ``c`` instead of it, never both).
Batch times spread around ``L_worker(b)`` by a lognormal multiplier of sigma ``s``
(``planner.sim.batch_time``), one sigma for every batch size.

Fitting. ``a`` and ``c`` are the non-negative least-squares fit of the observed batch
durations minus the curve's latency at their sizes (``scipy.optimize.nnls``); with one
batch size observed, ``a`` alone (their mean excess, at least 0) and ``c = 0``, and the
calibration says so. ``d`` is the mean, over the delivered frames, of the measured time
outside the device (end-to-end minus GPU-side latency) less what the model predicts for
the same frames of the same scenario. With unlimited CPU threads that prediction is the
scenario's ``2 * network + pre + post + overhead`` exactly; with a pool of threads it also
holds the queue waits the model predicts, which are therefore not counted twice. ``s`` is
the pooled standard deviation of ``ln(duration / median duration at its size)`` over the
batch sizes observed at least twice (degrees of freedom: batches less sizes), when at
least ``SPREAD_MIN_BATCHES`` batches stand behind it; else it is not fitted (None) and a
plan takes the curve's spread.

A calibration belongs to one curve, is stored with its date and the load test it came
from (``planner.validate.loadtest_store``), and changes a scenario in two places only: its latency
table and its overhead (``apply``), and, where fitted, the spread a plan's runs take
(``planner.plan.request.model_spread``). Its ``id`` is a short hash that links and saved plans
pin, so a newer calibration never changes what an older link shows.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np

from planner import display, limits
from planner.errors import BadInput
from planner.sim.scenario import Scenario
from planner.units import Milliseconds


@dataclass(frozen=True)
class Calibration:
    """A curve's calibration from a load test (see the module docstring).

    ``a_ms`` is added to every batch, ``c_ms`` per frame of the batch (the fitted
    per-request cost), ``d_ms`` to every frame's end-to-end latency (as overhead; an
    overhead never goes below 0); ``spread_sigma`` is the fitted sigma of ``ln`` batch
    time (None: not fitted). ``batches``
    and ``frames`` are how many observations the fit rests on; ``sizes`` the batch sizes
    seen; ``note`` what the fit could not do (one batch size: ``c`` not fitted).
    """

    curve_id: str
    a_ms: Milliseconds
    c_ms: Milliseconds
    d_ms: Milliseconds
    loadtest: int | None = None
    created_at: datetime | None = None
    batches: int = 0
    frames: int = 0
    sizes: tuple[int, ...] = ()
    note: str = ""
    spread_sigma: float | None = None

    def __post_init__(self) -> None:
        problems = []
        if self.spread_sigma is not None and not limits.SPREAD_SIGMA.holds(self.spread_sigma):
            problems.append(f"calibration spread_sigma must be {limits.SPREAD_SIGMA.words()}")
        for name in ("a_ms", "c_ms"):
            value = getattr(self, name)
            if not (isinstance(value, int | float) and math.isfinite(value) and value >= 0):
                problems.append(f"calibration {name} must be a finite number of ms, at least 0")
        if not (isinstance(self.d_ms, int | float) and math.isfinite(self.d_ms)):
            problems.append("calibration d_ms must be a finite number of ms")
        if problems:
            raise BadInput(problems)

    @property
    def id(self) -> str:
        """A short, URL-safe id (12 base32 characters, like a curve's): a hash of the
        curve, the figures, the load test and the date."""
        text = "|".join(
            (
                self.curve_id,
                repr(float(self.a_ms)),
                repr(float(self.c_ms)),
                repr(float(self.d_ms)),
                str(self.loadtest),
                self.created_at.isoformat() if self.created_at else "",
            )
        )
        if self.spread_sigma is not None:  # (calibrations without one keep their ids)
            text += "|" + repr(float(self.spread_sigma))
        digest = hashlib.sha256(text.encode("utf-8")).digest()
        return base64.b32encode(digest).decode("ascii").lower()[:12]

    def table(self, latency_ms: Sequence[float]) -> tuple[float, ...]:
        """A latency table (batch 1, 2, …) as the worker runs it: ``+ a + c * b``."""
        return _calibrated(tuple(float(v) for v in latency_ms), self.a_ms, self.c_ms)

    def spread(self, upto: int) -> tuple[float, ...]:
        """The fitted spread for batch 1..upto (``()`` when not fitted or 0)."""
        if not self.spread_sigma:
            return ()
        return (float(self.spread_sigma),) * int(upto)

    def overhead(self, overhead_ms: Milliseconds) -> Milliseconds:
        """A per-frame overhead with ``d`` added (never below 0)."""
        return max(0.0, float(overhead_ms) + self.d_ms)

    def apply(self, scenario: Scenario) -> Scenario:
        """``scenario`` as the calibrated model runs it: its table and overhead changed."""
        return scenario.with_(
            latency_ms=self.table(scenario.latency_ms),
            overhead_ms=self.overhead(scenario.overhead_ms),
        )

    @property
    def source(self) -> str:
        """Where it came from: ``load test 3 (2026-12-01)``."""
        what = f"load test {self.loadtest}" if self.loadtest is not None else "a load test"
        when = f" ({self.created_at.date().isoformat()})" if self.created_at else ""
        return what + when

    @property
    def description(self) -> str:
        """One sentence for people, next to a seat cap or in a report."""
        text = (
            f"Calibrated by {self.source}, calibration {self.id}: every batch takes "
            f"{display.ms(self.a_ms)} + {display.ms(self.c_ms)} per frame more than the curve, "
            f"and every frame {display.ms(self.d_ms, sign=True)} outside the device"
        )
        if self.spread_sigma is not None:
            text += f"; batch times spread with sigma {self.spread_sigma:.3f} (ln ms)"
        return text + (f" ({self.note})." if self.note else ".")

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready figures; ``spread_sigma`` only where a spread was fitted (a
        calibration stored before it existed reads back exactly as it did)."""
        spread = {} if self.spread_sigma is None else {"spread_sigma": self.spread_sigma}
        return {
            "id": self.id,
            "curve_id": self.curve_id,
            "loadtest": self.loadtest,
            "created_at": self.created_at.isoformat() if self.created_at else None,
            "a_ms": self.a_ms,
            "c_ms": self.c_ms,
            "d_ms": self.d_ms,
            "batches": self.batches,
            "frames": self.frames,
            "sizes": list(self.sizes),
            "note": self.note,
            **spread,
            "description": self.description,
        }


@functools.lru_cache(maxsize=256)
def _calibrated(table: tuple[float, ...], a: float, c: float) -> tuple[float, ...]:
    return tuple(v + a + c * b for b, v in enumerate(table, start=1))


@dataclass(frozen=True)
class Sample:
    """What one run contributes to a fit: its batches' sizes and durations, the curve's
    latency table the run was predicted with, each delivered frame's measured time
    outside the device, and the model's mean time outside the device for the same run."""

    sizes: np.ndarray
    durations_ms: np.ndarray
    curve_ms: tuple[float, ...]
    outside_ms: np.ndarray
    model_outside_ms: float


ONE_SIZE = "one batch size observed: the per-frame term c is not fitted (c = 0)"
SPREAD_MIN_BATCHES = 20
"""The fewest batches (at sizes seen at least twice) a fitted spread rests on."""


def fit_spread(sizes: np.ndarray, durations_ms: np.ndarray) -> float | None:
    """The pooled sigma of ``ln(duration / median duration at its size)`` (see the module
    docstring), or None with too few batches to say.

    Example
    -------
    >>> import numpy as np
    >>> z = np.random.default_rng(0).standard_normal(4000)
    >>> sizes = np.repeat([1, 4], 2000)
    >>> round(fit_spread(sizes, np.where(sizes == 1, 10.0, 30.0) * np.exp(0.2 * z)), 2)
    0.2
    """
    sizes = np.asarray(sizes, dtype=np.int64)
    logs = np.log(np.asarray(durations_ms, dtype=np.float64))
    squares, batches, groups = 0.0, 0, 0
    for size in np.unique(sizes):
        at = logs[sizes == size]
        if at.size < 2:
            continue
        squares += float(np.sum((at - np.median(at)) ** 2))
        batches += int(at.size)
        groups += 1
    if batches < SPREAD_MIN_BATCHES or batches <= groups:
        return None
    return min(math.sqrt(squares / (batches - groups)), float(limits.SPREAD_SIGMA.high))


def fit(samples: Sequence[Sample], curve_id: str, **metadata: Any) -> Calibration:
    """The calibration that best explains ``samples`` (see the module docstring).

    Raises BadInput when the samples hold no batch or no delivered frame. ``metadata``
    (``loadtest``, ``created_at``) is passed to the ``Calibration``.

    Example
    -------
    >>> import numpy as np
    >>> sample = Sample(np.array([1, 2, 2, 4]), np.array([12.0, 17.0, 17.0, 27.0]),
    ...                 (10.0, 14.0, 18.0, 22.0), np.array([5.0, 7.0]), 5.0)
    >>> c = fit([sample], "abc")
    >>> round(c.a_ms, 6), round(c.c_ms, 6), c.d_ms
    (1.0, 1.0, 1.0)
    """
    from scipy.optimize import nnls

    sizes = np.concatenate([s.sizes for s in samples]) if samples else np.zeros(0)
    if sizes.size == 0:
        raise BadInput("the load test ran no batch, so there is nothing to calibrate from")
    excess = np.concatenate(
        [s.durations_ms - np.asarray(s.curve_ms)[s.sizes.astype(np.int64) - 1] for s in samples]
    )
    frames = sum(int(s.outside_ms.size) for s in samples)
    if frames == 0:
        raise BadInput("the load test delivered no frame, so there is nothing to calibrate from")
    distinct = np.unique(sizes)
    note = ""
    if distinct.size == 1:
        a, c = max(0.0, float(np.mean(excess))), 0.0
        note = ONE_SIZE
    else:
        design = np.column_stack([np.ones(sizes.size), sizes.astype(np.float64)])
        (a, c), _ = nnls(design, excess)
        a, c = float(a), float(c)
    outside = sum(float(s.outside_ms.sum()) for s in samples)
    model = sum(s.model_outside_ms * s.outside_ms.size for s in samples)
    d = (outside - model) / frames
    durations = np.concatenate([s.durations_ms for s in samples])
    positive = durations > 0  # a duration of 0 has no log: a record too coarse to time
    return Calibration(
        curve_id=curve_id,
        a_ms=a,
        c_ms=c,
        d_ms=float(d),
        batches=int(sizes.size),
        frames=frames,
        sizes=tuple(int(v) for v in distinct),
        note=note,
        spread_sigma=fit_spread(sizes[positive], durations[positive]),
        **metadata,
    )
