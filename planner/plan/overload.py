"""What a single run says when it is far past what the card serves.

A run's own figures are relative: a session is starved below half the *mean* frame rate,
and Jain's index compares sessions with each other. When every session gets almost
nothing, both read healthy (no session is below half of a mean near zero; near-zero rates
can be fair). These notes say it in words, for the Simulate page and ``planner
simulate``: that every session gets less than half of what it sends, against what the
card delivered, and that the batches which ran lie where the curve is extrapolated.
"""

from __future__ import annotations

from planner import display
from planner.curves.fit import FittedCurve
from planner.sim.results import Results

SERVED_SHARE = 0.5
"""A session that gets less than this share of the frames it sends is not served (the
same half as the starvation flag, taken against its own rate instead of the mean)."""


def overload_notes(results: Results, fitted: FittedCurve) -> tuple[str, ...]:
    """Plain sentences (no markup) for a run far past the card's capacity; none for a run
    in which some session gets at least half its frame rate and every batch that ran lies
    within the measured batch sizes."""
    notes: list[str] = []
    sessions = results.sessions
    if sessions and all(s.fps < SERVED_SHARE * s.offered_fps for s in sessions):
        offered = sum(s.offered_fps for s in sessions)
        delivered = sum(s.fps for s in sessions)
        notes.append(
            f"No session gets even half the frames it sends: the {len(sessions):,} sessions "
            f"send {display.number(offered)} frames/s and the card delivered "
            f"{display.number(delivered)} frames/s ({display.fraction(delivered / offered)}). "
            "This many sessions is far past what the card serves; the starvation flags and "
            "the fairness index compare sessions with each other, so here they say nothing "
            "about whether any session is served."
        )
    ran = [size for size, count in results.batch_histogram.items() if count]
    if ran:
        largest = max(ran)
        measured = fitted.points[-1].batch
        if bool(fitted.extrapolated(largest)):
            notes.append(
                f"Batches of up to {largest:,} frames ran, where the curve is extrapolated: "
                f"its largest measured batch is {measured:,}, so the latency of every larger "
                "batch is the fit's assumption, not a measurement."
            )
    return tuple(notes)
