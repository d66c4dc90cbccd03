"""The simulator's runs as the front ends read them, so that a page or a command
reaches them through the views rather than the simulator's modules: one run's
``Scenario`` (with its ``Sharing``) and ``Results``, a pooled step of a sweep
(``Pooled``, and the ``PoolCache`` that keeps them), where a frame's time goes
(``Stages``, its ``PARTS`` and their ``PART_LABELS``), a load test's correction of the
model (``Calibration``), a run's decode stage (``Decoding``), and ``simulate_charged``,
which runs one scenario under a budget of work."""

from __future__ import annotations

from planner.sim.calibration import Calibration
from planner.sim.decode import Decoding
from planner.sim.pipeline import PART_LABELS, PARTS, Stages
from planner.sim.results import Results
from planner.sim.scenario import Scenario, Sharing
from planner.sim.simulate import simulate_charged
from planner.sim.sweep import PoolCache, Pooled

__all__ = [
    "PARTS",
    "PART_LABELS",
    "Calibration",
    "Decoding",
    "PoolCache",
    "Pooled",
    "Results",
    "Scenario",
    "Sharing",
    "Stages",
    "simulate_charged",
]
