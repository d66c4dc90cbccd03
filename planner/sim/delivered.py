"""A session's delivered frame rate, with the frames still in flight at the end left out.

A run stops at its end: a frame captured just before it may still be travelling to the
worker, in its pre stage or waiting for the batch in progress, so it is pending though
nothing went wrong. Such frames do not count against the session. The frames *due* of
a session are those it sent less the pending ones captured within the in-flight window
before the end; its delivered frame rate is its source rate times the share of its due
frames that were delivered (0 when none was due). A session that got every frame it
could have gets exactly its source rate, so a floor equal to the source rate holds.

The in-flight window is the longest a frame can take to reach a batch when the worker
keeps up: the time outside the GPU (``Scenario.non_gpu_ms``), the wait for a fuller
batch the policy allows (triton's ``max_queue_delay_us``), and one batch of every
session from the effective latency table (the batch in progress when it arrived).
Older pending frames (a queue that grows) count against the session.
"""

from __future__ import annotations

import numpy as np

from planner.sim.arrivals import Arrivals
from planner.sim.policies import POLICIES
from planner.sim.scenario import Scenario
from planner.sim.sharing import effective_table


def in_flight_window_ms(scenario: Scenario) -> float:
    """How long before the end a pending frame counts as in flight (module docstring)."""
    table = effective_table(np.asarray(scenario.latency_ms), scenario.sharing, scenario.peak_upto)
    batch = float(table[min(scenario.largest_batch(), table.size) - 1])
    wait = 0.0
    if "max_queue_delay_us" in POLICIES[scenario.policy].params:
        wait = scenario.param("max_queue_delay_us") / 1000.0
    return scenario.non_gpu_ms + wait + batch


def delivered_fps(
    scenario: Scenario, capture: Arrivals, delivered: np.ndarray, pending: np.ndarray
) -> np.ndarray:
    """Each session's delivered frame rate (module docstring), from its frames' capture
    times and its delivered and pending counts."""
    since = scenario.duration_ms - in_flight_window_ms(scenario)
    sent = np.diff(capture.start)
    # Frames captured within the window, per session: the few of them found in one pass
    # over all frames, then counted by the session each belongs to.
    late_frames = np.flatnonzero(capture.times >= since)
    owners = np.searchsorted(capture.start, late_frames, side="right") - 1
    late = np.bincount(owners, minlength=sent.size).astype(np.int64)
    due = sent - np.minimum(np.asarray(pending, dtype=np.int64), late)
    source = np.asarray(scenario.session_fps, dtype=np.float64)
    share = np.divide(
        np.asarray(delivered, dtype=np.float64), due, out=np.zeros(due.size), where=due > 0
    )
    return source * np.minimum(share, 1.0)
