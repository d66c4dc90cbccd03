"""The simulator against what queueing theory and the study say must happen (SPEC §2.4)."""

from __future__ import annotations

import pytest

from planner.sim.policies import POLICIES
from planner.sim.scenario import Scenario
from planner.sim.simulate import simulate

from .simulation_cases import LAPTOP_FP16, LAPTOP_TABLE


@pytest.mark.parametrize("policy", list(POLICIES))
def test_with_headroom_every_session_gets_its_full_frame_rate(policy: str) -> None:
    for seed in range(5):
        r = simulate(Scenario(latency_ms=LAPTOP_TABLE, sessions=3, policy=policy, seed=seed))
        for session in r.sessions:
            assert session.fps == pytest.approx(30.0, rel=0.005)


@pytest.mark.parametrize("policy", ["oldest-first", "round-robin"])
def test_saturated_batch_one_delivers_what_the_curve_allows(policy: str) -> None:
    r = simulate(Scenario(latency_ms=LAPTOP_TABLE, sessions=12, policy=policy))
    assert r.batch_histogram.keys() == {1}
    assert sum(r.per_session_fps) == pytest.approx(1000.0 / LAPTOP_FP16[1], rel=0.01)
    assert r.gpu_busy_fraction == pytest.approx(1.0, abs=0.01)


def test_batch_all_in_steady_overload_gives_every_session_the_same_rate() -> None:
    for sessions in (6, 9, 16):
        r = simulate(Scenario(latency_ms=LAPTOP_TABLE, sessions=sessions, policy="batch-all"))
        assert r.min_fps == pytest.approx(r.max_fps, rel=0.01)
        assert r.mean_fps < 29.0  # it is overloaded


def test_oldest_first_starves_a_session_where_round_robin_and_batch_all_do_not() -> None:
    for sessions in (4, 5, 6):
        starved = []
        for seed in range(10):
            oldest = simulate(Scenario(latency_ms=LAPTOP_TABLE, sessions=sessions, seed=seed))
            starved.append(oldest.min_fps < 0.5 * oldest.mean_fps)
            assert oldest.starved_sessions == [
                s.session for s in oldest.sessions if s.fps < 0.5 * oldest.mean_fps
            ]
            for policy in ("round-robin", "batch-all"):
                fair = simulate(
                    Scenario(latency_ms=LAPTOP_TABLE, sessions=sessions, seed=seed, policy=policy)
                )
                assert fair.min_fps >= 0.95 * fair.mean_fps
                assert fair.max_fps <= 1.05 * fair.mean_fps
        assert any(starved), f"{sessions} sessions: no seed of 0-9 starves under oldest-first"


def test_total_throughput_follows_the_batch_curve() -> None:
    # Laptop 512x288: batching does not pay, so batch-all delivers less than batch 1 does.
    one = simulate(Scenario(latency_ms=LAPTOP_TABLE, sessions=8, policy="round-robin"))
    everything = simulate(Scenario(latency_ms=LAPTOP_TABLE, sessions=8, policy="batch-all"))
    assert sum(everything.per_session_fps) < sum(one.per_session_fps)
    # A curve that rewards batching (laptop 256x144 FP16: 4.69 ms alone, 9.29 ms for 4).
    cheap = tuple(4.69 + (9.29 - 4.69) * (b - 1) / 3 for b in range(1, 65))
    one = simulate(Scenario(latency_ms=cheap, sessions=40, policy="round-robin"))
    everything = simulate(Scenario(latency_ms=cheap, sessions=40, policy="batch-all"))
    assert sum(everything.per_session_fps) > sum(one.per_session_fps)


def test_jain_index_and_results_document() -> None:
    r = simulate(Scenario(latency_ms=LAPTOP_TABLE, sessions=5, seed=5))
    doc = r.as_dict()
    assert set(doc) >= {
        "sessions", "policy", "per_session_fps", "mean_fps", "min_fps", "max_fps", "jain",
        "latency_ms", "e2e_latency_ms", "overwritten_fraction", "expired_fraction",
        "gpu_busy_fraction", "batch_histogram", "starved_sessions",
    }  # fmt: skip
    fps = doc["per_session_fps"]
    assert doc["jain"] == pytest.approx(sum(fps) ** 2 / (len(fps) * sum(f * f for f in fps)))
    assert 1 / len(fps) <= doc["jain"] <= 1.0
    assert doc["latency_ms"]["frames"] == sum(s.delivered for s in r.sessions)
