"""The policy kernels against plain Python selections written from SPEC §3.3.

Both engines call the same compiled kernels, so the engines' differential test cannot
catch a mistake inside one; these tests check the kernels' choices on their own.
"""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from planner.policies import _deadline, _take_oldest

arrival_times = st.lists(
    st.one_of(st.just(math.inf), st.sampled_from([0.0, 1.0, 2.5, 2.5, 7.0]), st.floats(0, 100)),
    min_size=1,
    max_size=24,
)


def oldest(pending: list[float], limit: int) -> list[int]:
    """Sessions with a pending frame, earliest arrival first, ties to the lower index."""
    waiting = sorted((t, i) for i, t in enumerate(pending) if t < math.inf)
    return [i for _, i in waiting[:limit]]


@settings(max_examples=300, deadline=None)
@given(arrival_times, st.integers(1, 30))
def test_take_oldest_picks_the_oldest_frames_ties_to_the_lower_session(
    pending: list[float], limit: int
) -> None:
    chosen = np.zeros(len(pending), np.int64)
    count = _take_oldest(np.array(pending), limit, chosen)
    assert chosen[:count].tolist() == oldest(pending, limit)


@settings(max_examples=300, deadline=None)
@given(
    arrival_times,
    st.floats(0, 120),
    st.floats(1, 80),
    st.lists(st.floats(0.1, 20), min_size=24, max_size=24),
)
def test_deadline_expires_and_batches_as_specified(
    pending: list[float], now: float, slo: float, steps: list[float]
) -> None:
    now = max(now, max((t for t in pending if t < math.inf), default=0.0))
    latency = np.r_[0.0, np.cumsum(steps)]  # latency[b], rising
    expired_expected = [
        i for i, t in enumerate(pending) if t < math.inf and now + latency[1] > t + slo
    ]
    live = [math.inf if i in expired_expected else t for i, t in enumerate(pending)]
    order = oldest(live, len(live))
    size = 0
    for k in range(len(order), 0, -1):  # the largest oldest-first batch meeting every deadline
        if all(now + latency[k] <= live[i] + slo for i in order[:k]):
            size = k
            break
    chosen = np.zeros(len(pending), np.int64)
    expired = np.zeros(len(pending), np.bool_)
    params = np.array([0.0, 0.0, slo])
    count, wake = _deadline(now, np.array(pending), latency, params, np.zeros(4), math.nan,
                            chosen, expired)  # fmt: skip
    assert np.flatnonzero(expired).tolist() == expired_expected
    assert chosen[:count].tolist() == order[:size]
    assert wake == math.inf
