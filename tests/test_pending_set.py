"""The pending set against a plain model: a dict of each session's time.

The kernels find the oldest frames, the next session in turn and all sessions in order
through ``planner.sim.pending``; these tests check its answers after random sequences of
frames joining and leaving, across word and summary-word boundaries and through the
queue's compaction.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planner.sim.pending import (
    MAX_SESSIONS,
    add,
    in_session_order,
    next_from,
    of_times,
    oldest,
    pending_set,
    remove,
    size,
    take_oldest,
)


def _oldest(model: dict[int, float], limit: int) -> list[int]:
    return [i for _, i in sorted((t, i) for i, t in model.items())[:limit]]


@st.composite
def histories(draw: st.DrawFn) -> tuple[int, list[tuple[float, list[int], list[int]]]]:
    """A session count and instants, as the engines see them: at each (later) instant some
    sessions' frames join (a session may already have one, which its new frame replaces),
    then some sessions' frames leave."""
    sessions = draw(st.sampled_from([1, 3, 31, 32, 33, 64, 200, 1024, 1100, 5000]))
    session = st.integers(0, sessions - 1)
    instants = []
    t = 0.0
    for _ in range(draw(st.integers(0, 120))):
        t += draw(st.sampled_from([0.5, 3.0, 10.0]))
        joins = draw(st.lists(session, max_size=6, unique=True))
        leaves = draw(st.lists(session, max_size=3, unique=True))
        instants.append((t, joins, leaves))
    return sessions, instants


@settings(max_examples=200, deadline=None)
@given(histories(), st.integers(0, 1200), st.integers(1, 40))
def test_the_set_answers_as_a_plain_model_does(
    history: tuple[int, list[tuple[float, list[int], list[int]]]], start: int, limit: int
) -> None:
    sessions, instants = history
    frames = pending_set(sessions)
    model: dict[int, float] = {}
    chosen = np.zeros(sessions, np.int64)
    for t, joins, leaves in instants:
        for i in sorted(joins):  # frames of one instant join by session, as the engines add
            add(frames.slots, frames.at, i, t)
            model[i] = t
        for i in leaves:
            if i in model:
                remove(frames.slots, frames.at, i)
                del model[i]

    assert size(frames.slots) == len(model)
    assert all(frames.at[i] == model.get(i, math.inf) for i in range(sessions))
    following = [i for i in sorted(model) if i >= start]
    assert next_from(frames.slots, start) == (following[0] if following else -1)
    count = in_session_order(frames.slots, chosen)
    assert chosen[:count].tolist() == sorted(model)
    count = take_oldest(frames.slots, oldest(frames.slots), limit, chosen)
    assert chosen[:count].tolist() == _oldest(model, limit)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.one_of(st.just(math.inf), st.sampled_from([0.0, 2.5, 2.5]), st.floats(0, 9)),
                min_size=1, max_size=80))  # fmt: skip
def test_a_set_built_from_times_holds_them(times: list[float]) -> None:
    frames = of_times(np.array(times))
    model = {i: t for i, t in enumerate(times) if t < math.inf}
    chosen = np.zeros(len(times), np.int64)
    count = take_oldest(frames.slots, oldest(frames.slots), len(times), chosen)
    assert chosen[:count].tolist() == _oldest(model, len(times))
    assert np.array_equal(frames.at, np.array(times))


def test_the_largest_set_finds_its_last_session_and_a_larger_one_is_refused() -> None:
    frames = pending_set(MAX_SESSIONS)
    last = MAX_SESSIONS - 1
    add(frames.slots, frames.at, last, 1.0)
    assert next_from(frames.slots, 0) == last
    assert next_from(frames.slots, last) == last
    with pytest.raises(ValueError, match="at most"):
        pending_set(MAX_SESSIONS + 1)
