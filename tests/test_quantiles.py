"""``planner.sim.quantiles.percentiles`` is ``np.percentile`` to the last bit, on the
arrays a run pools (millions of latencies, many of them equal) and on awkward ones."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from planner.sim.quantiles import percentiles

QS = [99.0, 50.0, 90.0, 99.0]


@given(
    values=arrays(
        np.float64,
        st.integers(1, 400),
        elements=st.one_of(
            st.floats(0.0, 200.0, allow_nan=False), st.sampled_from([1.5, 2.0, 49.999, 50.0])
        ),
    ),
    q=st.lists(st.floats(0.0, 100.0), min_size=1, max_size=5),
)
@settings(max_examples=300, deadline=None)
def test_it_is_numpys_percentile(values: np.ndarray, q: list[float]) -> None:
    expected = np.percentile(values, q)
    got = percentiles(values.copy(), q, fast_from=0)
    assert got == [float(v) for v in expected]


def test_on_a_run_sized_array_with_ties() -> None:
    rng = np.random.default_rng(7)
    # Frames of one batch share a latency: a few hundred thousand values, many repeated.
    values = np.repeat(rng.gamma(4.0, 8.0, 90_000), rng.integers(1, 9, 90_000))
    for q in (QS, [0.0, 100.0], [99.9], [12.5, 50.0, 87.5]):
        assert percentiles(values.copy(), q) == [float(v) for v in np.percentile(values, q)]
