"""Hypothesis strategies for random scenarios, shared by the simulator's tests."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from planner.sim.cascade import CascadeModel
from planner.sim.crops import Crops
from planner.sim.policies import POLICIES
from planner.sim.scenario import Scenario, Sharing
from planner.sim.stages import WorkerStages

LAPTOP_FP16 = {1: 9.82, 2: 20.36, 3: 32.71, 4: 46.15, 8: 103.77, 16: 221.25}


def straight_line_table(points: dict[int, float], upto: int = 64) -> tuple[float, ...]:
    """Latency for batch 1..upto by linear interpolation and the last segment's line."""
    batches = np.array(sorted(points), dtype=float)
    values = np.array([points[int(b)] for b in batches])
    b = np.arange(1, upto + 1, dtype=float)
    inside = np.interp(b, batches, values)
    slope = (values[-1] - values[-2]) / (batches[-1] - batches[-2])
    beyond = values[-1] + slope * (b - batches[-1])
    return tuple(np.where(b > batches[-1], beyond, inside))


LAPTOP_TABLE = straight_line_table(LAPTOP_FP16)


DRAWN_STEPS = 64
"""A table longer than this continues its last drawn step (drawing a thousand is slow)."""


@st.composite
def monotone_tables(draw: st.DrawFn, length: int) -> tuple[float, ...]:
    """A random non-decreasing latency table: sub-linear, linear or super-linear."""
    first = draw(st.floats(0.5, 60.0, allow_nan=False))
    exponent = draw(st.sampled_from([0.0, 0.3, 0.7, 1.0, 1.2]))
    drawn = min(length, DRAWN_STEPS) - 1
    steps = draw(st.lists(st.floats(0.0, 2.0, allow_nan=False), min_size=drawn, max_size=drawn))
    steps += steps[-1:] * (length - 1 - drawn)
    values = [first]
    for b, step in enumerate(steps, start=2):
        values.append(values[-1] + first * step * (b**exponent - (b - 1) ** exponent))
    return tuple(values)


@st.composite
def sharings(draw: st.DrawFn) -> Sharing:
    mode = draw(st.sampled_from(["exclusive", "exclusive", "time-slicing", "mps", "mig"]))
    if mode == "time-slicing":
        duties = draw(st.lists(st.sampled_from([0.0, 0.3, 0.9, 1.0]), min_size=1, max_size=3))
        busy = draw(st.sampled_from([5.0, 50.0]))
        return Sharing.of("time-slicing", cotenants=tuple(duties), busy_period_ms=busy)
    if mode == "mps":
        return Sharing.of("mps", mps_share=draw(st.sampled_from([10.0, 50.0, 100.0])))
    if mode == "mig":
        total = draw(st.sampled_from([4, 7]))
        return Sharing.of("mig", mig_slices=draw(st.integers(1, total)), mig_total=total)
    return Sharing()


@st.composite
def scenarios(
    draw: st.DrawFn,
    max_sessions: int = 48,
    min_sessions: int = 1,
    durations_s: tuple[float, ...] = (0.2, 0.5, 1.0, 2.0),
    spread: bool = False,
    cascade: bool = False,
) -> Scenario:
    """Random scenarios across every policy, phase model, sharing mode and frame-rate mix
    (frame rates per session repeat a drawn pattern of up to 8); with ``spread``, batch
    times spread by a drawn sigma per batch size (``planner.sim.batch_time``); with
    ``cascade``, one to three models after the first (``planner.sim.cascade``)."""
    sessions = draw(st.integers(min_sessions, max_sessions))
    policy = draw(st.sampled_from(list(POLICIES)))
    if draw(st.booleans()):
        fps: tuple[float, ...] = (draw(st.sampled_from([30.0, 15.0, 60.0, 24.0])),)
    else:
        rates = st.sampled_from([30.0, 15.0, 25.0, 60.0, 7.5])
        pattern = draw(st.lists(rates, min_size=1, max_size=min(sessions, 8)))
        fps = tuple(pattern[i % len(pattern)] for i in range(sessions))
    table_length = max(sessions, draw(st.integers(1, 64)))
    table = draw(monotone_tables(table_length))
    return Scenario(
        latency_ms=table,
        sessions=sessions,
        policy=policy,
        fps=fps,
        duration_s=draw(st.sampled_from(durations_s)),
        phases=draw(st.sampled_from(["random", "even", "aligned"])),
        seed=draw(st.integers(0, 2**32)),
        jitter_ms=draw(st.sampled_from([0.0, 0.0, 1.0, 8.0, 40.0])),  # 40: equal arrivals
        overhead_ms=draw(st.sampled_from([0.0, 5.0])),
        max_batch=draw(st.one_of(st.none(), st.integers(1, 12))),
        max_queue_delay_us=draw(st.one_of(st.none(), st.sampled_from([0.0, 500.0, 20000.0]))),
        slo_ms=draw(st.one_of(st.none(), st.floats(5.0, 200.0))),
        sharing=draw(sharings()),
        spread=draw(spreads(table_length)) if spread else (),
        cascade=draw(cascades()) if cascade else (),
        **draw(worker_stages(table[0])),
    )


@st.composite
def crop_laws(draw: st.DrawFn) -> Crops:
    """Crops per input: fixed (0 included: no call), Poisson or a histogram."""
    kind = draw(st.sampled_from(["fixed", "poisson", "hist"]))
    if kind == "fixed":
        return Crops("fixed", k=draw(st.integers(0, 4)))
    if kind == "poisson":
        return Crops("poisson", mean=draw(st.sampled_from([0.3, 1.0, 2.5, 6.0])))
    counts = draw(st.lists(st.integers(0, 6), min_size=1, max_size=4, unique=True))
    shares = draw(st.lists(st.floats(0.05, 1.0), min_size=len(counts), max_size=len(counts)))
    return Crops("hist", shares=tuple(zip(counts, shares, strict=True)))


@st.composite
def cascades(draw: st.DrawFn) -> tuple[CascadeModel, ...]:
    """One to three later models, each with a short table (so that large inputs split
    into several calls) and its crops."""
    models = []
    for _ in range(draw(st.integers(1, 3))):
        largest = draw(st.sampled_from([1, 4, 16, 64]))
        models.append(CascadeModel(draw(monotone_tables(largest)), draw(crop_laws())))
    return tuple(models)


@st.composite
def spreads(draw: st.DrawFn, length: int) -> tuple[float, ...]:
    """A batch-time spread for a table of ``length``: one sigma for all sizes, or a
    sigma per size (some sizes without spread)."""
    sigmas = st.sampled_from([0.0, 0.05, 0.2, 0.35, 1.0])
    if draw(st.booleans()):
        return (draw(st.sampled_from([0.05, 0.2, 0.35, 1.0])),) * length
    pattern = draw(st.lists(sigmas, min_size=1, max_size=8))
    return tuple(pattern[i % len(pattern)] for i in range(length))


@st.composite
def stage_times(draw: st.DrawFn, batch_ms: float) -> float:
    """A CPU stage of 0 to several GPU batch times, often 0, sometimes exactly one batch
    time or a whole frame period (so events coincide)."""
    return draw(
        st.one_of(
            st.just(0.0),
            st.sampled_from([batch_ms, 2.0 * batch_ms, 1000.0 / 30.0, 1000.0 / 60.0]),
            st.floats(0.05, 4.0 * batch_ms),
        )
    )


@st.composite
def worker_stages(draw: st.DrawFn, batch_ms: float) -> dict[str, object]:
    """The worker beyond the GPU (SPEC §5.1): network, pre and post stages, CPU threads
    (0 = unlimited), and a memory limit on the batch."""
    if draw(st.integers(0, 4)) == 0:
        return {}  # the first wave's scenario
    stages = WorkerStages(
        network_ms=draw(st.sampled_from([0.0, 0.0, 1.5, 10.0, 50.0])),
        pre_ms=draw(stage_times(batch_ms)),
        post_ms=draw(stage_times(batch_ms)),
        cpu_workers=draw(st.sampled_from([0, 1, 1, 2, 3, 8])),
    )
    return {
        "stages": stages,
        "memory_batch_limit": draw(st.one_of(st.none(), st.integers(1, 8))),
    }
