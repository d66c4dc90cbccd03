"""The reference worker's arrival schedule: the simulator's, bit for bit.

Capture times come from ``planner.sim.arrivals.arrivals`` (the same phase model, seed and
jitter as every simulation of the scenario), and a frame's arrival at the worker is its
capture time plus the network delay, computed the way the reference engine computes it
(``float(capture) + network_ms``). The worker handles the arrivals in the order the
engines do at equal times: by session, then by frame.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from planner.sim.arrivals import arrivals
from planner.sim.scenario import Scenario


@dataclass(frozen=True)
class Schedule:
    """Every frame of a run in session order (``session``, ``frame``, ``capture_ms``,
    ``arrival_ms``), and ``order``: the frames in the order they reach the worker."""

    session: np.ndarray
    frame: np.ndarray
    capture_ms: np.ndarray
    arrival_ms: np.ndarray
    order: np.ndarray

    @property
    def frames(self) -> int:
        return int(self.session.size)


def schedule(scenario: Scenario) -> Schedule:
    """The arrival schedule of ``scenario`` (see the module docstring)."""
    capture = arrivals(scenario)
    counts = np.diff(capture.start)
    session = np.repeat(np.arange(scenario.sessions, dtype=np.int64), counts)
    frame = np.arange(capture.times.size, dtype=np.int64) - np.repeat(capture.start[:-1], counts)
    network = scenario.stages.network_ms
    # Element by element as the reference engine does it: float(t) + network.
    arrival = np.array([float(t) + network for t in capture.times.tolist()], np.float64)
    order = np.lexsort((frame, session, arrival))
    return Schedule(
        session=session,
        frame=frame,
        capture_ms=capture.times.copy(),
        arrival_ms=arrival,
        order=order.astype(np.int64),
    )
