"""The budget of work a page runs the simulator under (``planner.sim.work``), for the
front ends: a ``Work`` account, ``OverBudget`` (what a plan or a chart too large for it
raises), the budget's frames and turns as the environment sets them, and ``warm_up``,
which compiles the simulator's kernels before the first visitor waits for them (into
``compiled_code_cache()``)."""

from __future__ import annotations

from planner.sim.ensemble import warm_up
from planner.sim.jit import cache_dir as compiled_code_cache
from planner.sim.work import OverBudget, Work, budget_frames, turns

__all__ = ["OverBudget", "Work", "budget_frames", "compiled_code_cache", "turns", "warm_up"]
