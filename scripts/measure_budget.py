#!/usr/bin/env python3
"""What the default frame budget costs on this machine: the CPU-seconds and wall seconds
a page's computation takes to use it up.

It plans the crafted link of docs/reliability.md (a card on which every session count
passes, 64 seeds of 600 s at up to 256 sessions: hours of simulation) under a ``Work``
with the given budget (default ``planner.sim.work.DEFAULT_BUDGET_FRAMES``), the way the
Plan page does, until the budget stops it, and prints the frames simulated, the
process's CPU-seconds (every thread) and the wall time. Run it from the repository root:

    python scripts/measure_budget.py            # the default budget
    python scripts/measure_budget.py 100000000  # another one
"""

from __future__ import annotations

import contextlib
import os
import sys
import time

from planner.links.urls import decode
from planner.plan.params import PlanParams
from planner.plan.recommend import recommend
from planner.plan.resolve import plan_inputs
from planner.sim.work import CHUNK_FRAMES, DEFAULT_BUDGET_FRAMES, OverBudget, Work

CRAFTED = {"points": "1:0.001,2:0.001,4:0.002", "seeds": "64", "duration_s": "600",
           "max_sessions": "256"}  # fmt: skip


def main() -> int:
    budget = float(sys.argv[1]) if len(sys.argv) > 1 else float(DEFAULT_BUDGET_FRAMES)
    params, _ignored = decode(PlanParams, CRAFTED)
    request = plan_inputs(params, None).request  # embedded points: no store
    # Compile the simulator first (from its cache when warm): not the budget's cost.
    with contextlib.suppress(OverBudget):
        recommend(request, work=Work(budget=CHUNK_FRAMES))
    account = Work(budget=budget)
    cpu, wall = time.process_time(), time.perf_counter()
    try:
        recommend(request, work=account)
        stopped = "finished within the budget"
    except OverBudget:
        stopped = "stopped by the budget"
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    print(
        f"budget {budget / 1e6:,.0f} million frames: {stopped} after {account.done / 1e6:,.0f} "
        f"million frames in {account.chunks} chunks; {cpu:.1f} CPU-seconds, {wall:.1f} s wall "
        f"on {cores} cores; load average {os.getloadavg()[0]:.1f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
