"""The simulator's results as the front ends read them, so that a page or a command
reaches them through the views rather than the simulator's modules: one run's
``Results``, a pooled step of a sweep (``Pooled``), where a frame's time goes
(``Stages``, its ``PARTS`` and their ``PART_LABELS``) and a load test's correction of the
model (``Calibration``)."""

from __future__ import annotations

from planner.sim.calibration import Calibration
from planner.sim.pipeline import PART_LABELS, PARTS, Stages
from planner.sim.results import Results
from planner.sim.sweep import Pooled

__all__ = ["PARTS", "PART_LABELS", "Calibration", "Pooled", "Results", "Stages"]
