"""The delivered frame rate (``planner.sim.delivered``): a session that got every frame it
could have gets exactly its source rate in both engines, whatever is still in flight at the
end of the run; frames that pile up in a queue still count against it."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from planner.sim.ensemble import run_many
from planner.sim.scenario import Scenario
from planner.sim.simulate import simulate
from planner.sim.stages import WorkerStages


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    fps=st.sampled_from([15.0, 25.0, 29.97, 30.0, 60.0]),
    sessions=st.integers(1, 4),
    duration_s=st.sampled_from([2.0, 5.0, 7.3]),
    phases=st.sampled_from(["random", "even", "aligned"]),
)
def test_a_session_that_keeps_up_gets_its_source_rate(
    seed: int, fps: float, sessions: int, duration_s: float, phases: str
) -> None:
    # Batches far shorter than a frame period: no frame is ever overwritten.
    scenario = Scenario(latency_ms=(1.0, 1.5, 2.0, 2.5), sessions=sessions, fps=(fps,),
                        duration_s=duration_s, phases=phases, seed=seed)  # fmt: skip
    for engine in ("fast", "reference"):
        results = simulate(scenario, engine=engine)
        assert all(s.overwritten == 0 for s in results.sessions)
        assert results.per_session_fps == [fps] * sessions, engine
    (outcome,) = run_many([scenario])
    assert list(outcome.fps) == [fps] * sessions


def test_the_frame_in_flight_at_the_end_does_not_count_against_the_session() -> None:
    # 30 s at 30 fps over a 40 ms network: the last frame, captured 33 ms before the end,
    # reaches the worker after it. 899 of 900 are delivered, and the session got every
    # frame it could have.
    scenario = Scenario(latency_ms=(3.0,), sessions=1, fps=(30.0,), duration_s=30.0,
                        phases="aligned", stages=WorkerStages(network_ms=40.0))  # fmt: skip
    for engine in ("fast", "reference"):
        results = simulate(scenario, engine=engine)
        (session,) = results.sessions
        assert (session.arrived, session.delivered, session.pending) == (900, 899, 1)
        assert results.min_fps == 30.0, engine
    (outcome,) = run_many([scenario])
    assert list(outcome.fps) == [30.0]


def test_a_queue_that_grows_counts_against_the_session() -> None:
    # Every frame queued on a GPU that serves 20 frames a second of the 30 sent.
    scenario = Scenario(latency_ms=(50.0,), sessions=1, fps=(30.0,), duration_s=10.0,
                        queue="all", policy="oldest-first", seed=3)  # fmt: skip
    for engine in ("fast", "reference"):
        results = simulate(scenario, engine=engine)
        (session,) = results.sessions
        assert session.pending >= 100
        assert 19.0 < results.min_fps < 21.0, engine
