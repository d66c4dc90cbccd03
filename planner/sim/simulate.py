"""Run one scenario: ``simulate(scenario)`` returns its results (SPEC §3.3)."""

from __future__ import annotations

from typing import Literal

from planner.sim.engine_fast import run_fast
from planner.sim.engine_reference import run_reference
from planner.sim.results import Results, summarise
from planner.sim.scenario import Scenario
from planner.sim.work import Work, frames_of

Engine = Literal["fast", "reference"]


def simulate(scenario: Scenario, engine: Engine = "fast") -> Results:
    """Simulate ``scenario`` with the fast engine (or the reference engine, for checks)."""
    records = run_fast(scenario) if engine == "fast" else run_reference(scenario)
    return summarise(scenario, records)


def simulate_charged(scenario: Scenario, work: Work | None) -> Results:
    """``simulate(scenario)`` as one chunk of ``work`` when given: admitted against its
    budget (OverBudget before it would cross it), run holding one of the process's turns,
    then counted."""
    if work is None:
        return simulate(scenario)
    frames = frames_of(sum(scenario.session_fps), scenario.duration_s)
    work.admit(frames)
    with work.turn():
        results = simulate(scenario)
    work.finished(frames)
    return results
