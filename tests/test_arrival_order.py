"""Arrivals and the order frames reach the worker in (``planner.sim.arrivals``): the
whole-array forms give exactly what the plain definitions give, session by session and by
a full stable sort, so every run sees the same frames in the same order."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planner.sim.arrivals import arrival_order, arrivals
from planner.sim.scenario import Scenario
from planner.sim.streams import generators


def by_session(s: Scenario) -> tuple[np.ndarray, np.ndarray]:
    """The arrivals without jitter by their definition: ``offset + k * period`` for each
    session in turn, while before the end."""
    periods = 1000.0 / np.asarray(s.session_fps, dtype=np.float64)
    n = s.sessions
    if s.phases == "random":
        offsets = generators(s.seed)[0].random(n) * periods
    elif s.phases == "even":
        offsets = np.arange(n, dtype=np.float64) * periods / n
    else:
        offsets = np.zeros(n)
    chunks = []
    for period, offset in zip(periods, offsets, strict=True):
        count = int(np.ceil((s.duration_ms - offset) / period))
        times = offset + np.arange(max(count, 0), dtype=np.float64) * period
        chunks.append(times[times < s.duration_ms])
    start = np.zeros(n + 1, dtype=np.int64)
    np.cumsum([c.size for c in chunks], out=start[1:])
    return np.concatenate(chunks), start


def sorted_in_full(times: np.ndarray, start: np.ndarray, stages: np.ndarray) -> tuple:
    """``arrival_order`` by its definition: one stable sort of every frame's time."""
    network, pre, post, workers = (float(v) for v in stages)
    arrival = times + network if network != 0.0 else times
    owner = np.repeat(np.arange(start.size - 1, dtype=np.int64), np.diff(start))
    if not (workers > 0 and (pre > 0 or post > 0)):
        ready = arrival + pre if pre != 0.0 else arrival
        order = np.argsort(ready, kind="stable")
        return None, owner[order], ready[order]
    order = np.argsort(arrival, kind="stable").astype(np.int64)
    return order, owner[order], arrival[order]


STAGES = [
    np.zeros(4),
    np.array([1.0, 0.5, 0.0, 0.0]),
    np.array([0.3, 0.7, 0.2, 2.0]),
    np.array([0.0, 1.0, 0.0, 1.0]),
]


def same(a: tuple, b: tuple) -> bool:
    return all(
        (x is None and y is None)
        or (x is not None and y is not None and x.dtype == y.dtype and np.array_equal(x, y))
        for x, y in zip(a, b, strict=True)
    )


scenarios = st.builds(
    lambda n, rates, phases, jitter, duration, seed: Scenario(
        latency_ms=tuple(float(b) for b in range(1, n + 1)),
        sessions=n,
        fps=tuple(rates[i % len(rates)] for i in range(n)) if len(rates) > 1 else rates,
        duration_s=duration,
        phases=phases,
        jitter_ms=jitter,
        seed=seed,
    ),
    n=st.integers(1, 120),
    rates=st.lists(
        st.sampled_from([30.0, 29.97, 25.0, 60.0, 7.0, 1.0]), min_size=1, max_size=3
    ).map(tuple),
    phases=st.sampled_from(["random", "even", "aligned"]),
    jitter=st.sampled_from([0.0, 0.0, 0.5, 4.0]),
    duration=st.sampled_from([0.05, 0.5, 1.0, 3.3]),
    seed=st.integers(0, 50),
)


@given(s=scenarios)
@settings(max_examples=150, deadline=None)
def test_the_order_is_the_full_stable_sort(s: Scenario) -> None:
    a = arrivals(s)
    for stages in STAGES:
        expected = sorted_in_full(a.times, a.start, stages)
        assert same(arrival_order(a.times, a.start, stages), expected)


@given(s=scenarios)
@settings(max_examples=150, deadline=None)
def test_arrivals_without_jitter_are_each_session_by_its_definition(s: Scenario) -> None:
    a = arrivals(s.with_(jitter_ms=0.0))
    times, start = by_session(s)
    assert np.array_equal(a.times, times) and np.array_equal(a.start, start)


def test_equal_times_go_to_the_lower_session_then_the_earlier_frame() -> None:
    # Aligned phases: every session's frame k arrives at the same time, so the order
    # within each instant is the sessions' order; a network delay adds ties of its own.
    s = Scenario(latency_ms=(1.0, 2.0, 3.0, 4.0), sessions=4, duration_s=0.2, phases="aligned")
    a = arrivals(s)
    _, sessions, times = arrival_order(a.times, a.start, np.array([0.1, 0.0, 0.0, 0.0]))
    per_frame = a.start[1] - a.start[0]
    assert list(sessions) == [0, 1, 2, 3] * int(per_frame)
    assert np.all(np.diff(times) >= 0)


@pytest.mark.parametrize("phases", ["random", "even", "aligned"])
def test_a_big_cards_sessions_with_every_frame_are_the_definitions(phases: str) -> None:
    # Every session has all its frames (the whole grid, the usual case at scale).
    s = Scenario(latency_ms=(1.0,) * 600, sessions=594, phases=phases, seed=3)
    a = arrivals(s)
    times, start = by_session(s)
    assert np.array_equal(a.times, times) and np.array_equal(a.start, start)
    assert np.all(np.diff(a.start) == a.start[1])
    for stages in STAGES:
        expected = sorted_in_full(a.times, a.start, stages)
        assert same(arrival_order(a.times, a.start, stages), expected)
