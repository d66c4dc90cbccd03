"""Batch-time spread (``planner.sim.batch_time``): both engines draw the same batch times,
a scenario without spread runs exactly as before, and the draws have the stated law."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from planner.errors import BadInput
from planner.sim.batch_time import Z_BOUND, batch_ms, draws, spread_arrays, stretch
from planner.sim.engine_fast import run_fast
from planner.sim.engine_reference import run_reference
from planner.sim.ensemble import run_many
from planner.sim.policies import POLICIES
from planner.sim.scenario import Scenario, Sharing
from planner.sim.stages import WorkerStages
from planner.sim.streams import BATCH_STREAM, generators

from .simulation_cases import LAPTOP_TABLE, scenarios


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios(spread=True))
def test_fast_engine_matches_reference_engine_exactly_with_spread(scenario: Scenario) -> None:
    fast = run_fast(scenario)
    reference = run_reference(scenario)
    assert fast.same_as(reference, tolerance_ms=1e-9) == []


SLICED = Sharing.of("time-slicing", cotenants=(0.6, 0.3), busy_period_ms=20.0)


@pytest.mark.parametrize("policy", list(POLICIES))
@pytest.mark.parametrize("sharing", [Sharing(), SLICED], ids=["exclusive", "time-slicing"])
@pytest.mark.parametrize("stages", [None, WorkerStages(pre_ms=3.0, post_ms=1.0, cpu_workers=2)])
def test_every_policy_runs_the_same_spread_batches_on_both_engines(
    policy: str, sharing: Sharing, stages: WorkerStages | None
) -> None:
    s = Scenario(
        latency_ms=LAPTOP_TABLE, sessions=6, policy=policy, duration_s=2.0, seed=7,
        sharing=sharing, spread=(0.3,) * len(LAPTOP_TABLE),
        **({} if stages is None else {"stages": stages}),
    )  # fmt: skip
    fast, reference = run_fast(s), run_reference(s)
    assert fast.same_as(reference, tolerance_ms=1e-9) == []
    # The spread is in force: the batches do not all take their table value.
    plain = run_fast(s.with_(spread=()))
    assert fast.same_as(plain, tolerance_ms=1e-9) != []


def test_the_many_run_engine_draws_what_each_run_draws_alone() -> None:
    base = Scenario(latency_ms=LAPTOP_TABLE, sessions=5, duration_s=2.0, sharing=SLICED)
    spread = (0.25,) * len(LAPTOP_TABLE)
    runs = [base.with_(policy=p, seed=k, spread=spread) for p in ("batch-all", "triton")
            for k in range(3)] + [base]  # fmt: skip
    for scenario, outcome in zip(runs, run_many(runs), strict=True):
        alone = run_fast(scenario)
        assert np.array_equal(outcome.latency_ms, alone.frame_latency)


@settings(max_examples=40, deadline=None)
@given(scenarios())
def test_no_spread_and_zero_spread_are_todays_records(scenario: Scenario) -> None:
    zeros = scenario.with_(spread=(0.0,) * len(scenario.latency_ms))
    assert zeros == scenario and zeros.spread == ()
    r = run_fast(scenario)
    # Without spread every batch takes exactly its table value (or, time-sliced, the
    # work of its table value).
    if scenario.sharing.mode == "exclusive":
        from planner.sim.sharing import effective_table

        table = effective_table(np.asarray(scenario.latency_ms), scenario.sharing)
        assert np.allclose(r.batch_end - r.batch_start, table[r.batch_size - 1], atol=1e-9)
    sigma, z = spread_arrays((), scenario.seed, 100)
    assert sigma.size == 0 and z.size == 0
    assert batch_ms(np.array([0.0, 3.0]), sigma, z, 5, 1) == 3.0


def test_adding_the_batch_stream_left_the_older_streams_unchanged() -> None:
    for seed in (0, 1, 12345, 2**40):
        before = [np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(3)]
        after = generators(seed)
        assert len(after) == 4
        for old, new in zip(before, after, strict=False):
            assert np.array_equal(old.random(8), new.random(8))


def test_same_seed_same_draws_other_seed_other_draws() -> None:
    assert np.array_equal(draws(3, 5000), draws(3, 5000))
    assert np.array_equal(draws(3, 5000)[:700], draws(3, 700))  # a longer run, a longer prefix
    assert np.array_equal(draws(3, 3_000_000)[:5000], draws(3, 5000))  # uncached, the same
    assert not np.array_equal(draws(3, 5000), draws(4, 5000))
    expected = np.clip(generators(3)[BATCH_STREAM].standard_normal(100), -Z_BOUND, Z_BOUND)
    assert np.array_equal(draws(3, 100), expected)
    s = Scenario(latency_ms=LAPTOP_TABLE, sessions=4, duration_s=3.0,
                 spread=(0.3,) * len(LAPTOP_TABLE))  # fmt: skip
    one, again, other = run_fast(s), run_fast(s), run_fast(s.with_(seed=1))
    assert one.same_as(again, tolerance_ms=0.0) == []
    took = one.batch_end - one.batch_start
    other_took = other.batch_end - other.batch_start
    assert not np.array_equal(took[:10], other_took[:10])


def test_batch_times_have_the_table_as_median_and_the_stated_p90() -> None:
    # One session at a frame rate the card keeps up with: every batch is of one frame,
    # so the durations are latency[1] times the multipliers.
    sigma = 0.3
    s = Scenario(latency_ms=(4.0, 6.0), sessions=1, fps=(60.0,), duration_s=600.0, seed=11,
                 spread=(sigma, sigma))  # fmt: skip
    r = run_fast(s)
    took = (r.batch_end - r.batch_start) / 4.0
    assert r.batch_size.max() == 1 and took.size > 30_000
    p50, p90 = np.percentile(took, [50, 90])
    assert p50 == pytest.approx(1.0, abs=0.01)
    assert p90 / p50 == pytest.approx(math.exp(1.2816 * sigma), rel=0.02)
    assert took.max() <= math.exp(Z_BOUND * sigma) * (1 + 1e-12)
    assert stretch(s.spread) == pytest.approx(math.exp(Z_BOUND * sigma))


def test_a_spread_that_does_not_cover_the_table_is_refused() -> None:
    with pytest.raises(BadInput, match="spread has 2 values for a table of 3"):
        Scenario(latency_ms=(1.0, 2.0, 3.0), sessions=2, spread=(0.1, 0.1))
    with pytest.raises(BadInput, match="sigma of ln batch time"):
        Scenario(latency_ms=(1.0, 2.0), sessions=2, spread=(0.1, -0.1))
