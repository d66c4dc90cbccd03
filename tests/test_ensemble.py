"""Many runs at once give exactly what each run gives on its own."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planner.sim.ensemble import run_many
from planner.sim.pipeline import job_sums
from planner.sim.scenario import Scenario
from planner.sim.simulate import simulate

from .simulation_cases import scenarios


@settings(max_examples=25, deadline=None)
@given(st.lists(scenarios(max_sessions=16), min_size=1, max_size=8))
def test_run_many_equals_simulating_each_scenario(batch: list[Scenario]) -> None:
    # Same seeds and sharing with other session counts and policies, so runs share
    # arrivals and co-tenant timelines drawn to different horizons.
    batch = batch + [s.with_(policy="batch-all") for s in batch]
    batch += [s.with_(sessions=max(1, s.sessions - 1), fps=s.fps[:1]) for s in batch[:2]]
    for outcome, scenario in zip(run_many(batch), batch, strict=True):
        alone = simulate(scenario)
        assert outcome.scenario is scenario
        assert np.array_equal(outcome.latency_ms, alone.records.frame_latency)
        assert np.array_equal(outcome.fps, np.array(alone.per_session_fps))
        assert outcome.overwritten == sum(s.overwritten for s in alone.sessions)
        assert outcome.expired == sum(s.expired for s in alone.sessions)
        assert outcome.arrived == sum(s.arrived for s in alone.sessions)
        assert outcome.gpu_busy_fraction == pytest.approx(alone.gpu_busy_fraction, rel=1e-12)
        hist = {b: int(c) for b, c in enumerate(outcome.batch_sizes) if c}
        assert hist == alone.batch_histogram
        r = alone.records
        assert np.array_equal(outcome.worker_ms, r.frame_done - r.frame_arrival)
        if scenario.cpu_pool:
            # Kept as sums inside the loop (the job records are not kept for many runs).
            sums = job_sums(
                r.job_kind,
                r.job_ready,
                r.job_start,
                scenario.stages.pre_ms,
                scenario.stages.post_ms,
                scenario.duration_ms,
            )
            assert outcome.cpu_sums == pytest.approx(sums, rel=1e-9, abs=1e-9)
        else:
            assert outcome.cpu_sums is None


def test_run_many_of_nothing_is_nothing() -> None:
    assert run_many([]) == []
