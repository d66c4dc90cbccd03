"""Run one scenario: ``simulate(scenario)`` returns its results (SPEC §3.3)."""

from __future__ import annotations

from typing import Literal

from planner.sim.engine_fast import run_fast
from planner.sim.engine_reference import run_reference
from planner.sim.results import Results, summarise
from planner.sim.scenario import Scenario

Engine = Literal["fast", "reference"]


def simulate(scenario: Scenario, engine: Engine = "fast") -> Results:
    """Simulate ``scenario`` with the fast engine (or the reference engine, for checks)."""
    records = run_fast(scenario) if engine == "fast" else run_reference(scenario)
    return summarise(scenario, records)
