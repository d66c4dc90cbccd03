"""The budget of work a page runs the simulator under (``planner.sim.work``), for the
front ends: ``OverBudget`` is what a plan or a chart too large for it raises."""

from __future__ import annotations

from planner.sim.work import OverBudget

__all__ = ["OverBudget"]
