"""Which batch size to measure next: one definition for every page and command.

The batch size to measure next is the one whose measurement would most narrow the fitted
curve's band *where a decision depends on it* (``FittedCurve.measure_next`` tries each
candidate as if measured at the central estimate and keeps the one that leaves the
smallest weighted sum of relative band widths). What a decision depends on is the
weighting, and it is the only thing that differs between the two cases:

- **a plan** (the Plan and Compare pages, ``planner recommend``): the batch sizes that ran
  in the simulations that decided the recommended option's cap — at the cap and one
  session above it — weighted by the frames each carried (under the MPS and derived MIG
  models, also the batch of peak throughput, which scales every batch's latency). The
  advice is always a batch size the plan can run: at most the largest batch any of its
  options forms at the session counts its search considered (1 under a policy that sends
  one frame at a time). No advice when the cap is a single number resting on measured
  batch sizes only: no measurement would change it.
- **no plan** (the Curves page, ``planner fit``): every batch size from 1 to 64 alike,
  and the advice says so, since a plan would usually weight a few batch sizes only. How
  far ``planner fit`` prints its table (``--upto``) does not change it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from planner.curves.fit import FittedCurve

NO_PLAN_UPTO = 64


@dataclass(frozen=True)
class Advice:
    """A batch size to measure next (None: nothing worth measuring) and, in words, what
    the advice is relative to."""

    batch: int | None
    basis: str


def for_curve(curve: FittedCurve) -> Advice:
    """Advice without a plan: the band over batch sizes 1..``NO_PLAN_UPTO``, all weighted
    alike (the same whatever range a page or command displays)."""
    return Advice(
        batch=curve.measure_next(NO_PLAN_UPTO),
        basis=(
            f"no plan: it assumes batch sizes up to {NO_PLAN_UPTO} and narrows the band most "
            f"over batch sizes 1–{NO_PLAN_UPTO}, weighted alike"
        ),
    )


def for_plan(
    curve: FittedCurve, largest_batch: int, deciding_batches: Sequence[int], *, settled: bool
) -> Advice:
    """Advice for a plan whose options form batches of at most ``largest_batch`` frames and
    whose recommended option's cap was decided by runs that carried
    ``deciding_batches[b]`` frames in batches of b (index 0 unused; batch sizes above
    ``largest_batch`` are left out); ``settled`` when that cap is a single number resting
    on measured batch sizes only. The batch advised is never above ``largest_batch``."""
    upto = max(1, int(largest_batch))
    runs = _runs(upto)
    if settled:
        return Advice(
            batch=None,
            basis=f"this plan ({runs}): its cap is one number that rests on measured batch "
            "sizes only",
        )
    weights = np.zeros(upto)
    frames = np.asarray(deciding_batches[1 : upto + 1], dtype=float)
    weights[: frames.size] = frames
    used = [int(b) + 1 for b in np.flatnonzero(weights)]
    batch = curve.measure_next(upto, weights if used else None)
    if batch is None:
        beyond = [b for b, n in enumerate(deciding_batches) if b > upto and n]
        also = (
            f"; its cap also rests on the curve at {_span(beyond)}, which no option of it "
            "forms (under MPS and MIG, where the curve's throughput peaks)"
            if beyond
            else ""
        )
        return Advice(batch=None, basis=f"this plan ({runs}): each of them is measured{also}")
    return Advice(batch=batch, basis=_plan_basis(used, runs))


def _runs(upto: int) -> str:
    return f"the batch sizes it can run are 1–{upto}" if upto > 1 else "it runs batch 1 only"


def _plan_basis(used: list[int], runs: str) -> str:
    if not used:
        return (
            f"this plan ({runs}): no batch among them carried frames in the runs that decided "
            "its cap, so all are weighted alike"
        )
    sizes = _span(used)
    return (
        f"this plan ({runs}): it narrows the band most at the batch sizes that decided the "
        f"cap ({sizes}), weighted by the frames each carried"
    )


def _span(batches: list[int]) -> str:
    if len(batches) == 1:
        return f"batch {batches[0]}"
    if batches == list(range(batches[0], batches[-1] + 1)):
        return f"batches {batches[0]}–{batches[-1]}"
    shown = ", ".join(str(b) for b in batches[:6])
    return f"batches {shown}" + (", …" if len(batches) > 6 else "")
