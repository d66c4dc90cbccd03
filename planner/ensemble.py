"""Many simulation runs at once: the engine behind sweeps and the recommendation.

``run_many(scenarios)`` gives the same figures as simulating each scenario on its own
(a test checks it against ``simulate``) but prepares shared inputs once — runs that
differ only in policy share their arrivals and co-tenant activity — and runs the fast
engine's loop over all of them in parallel threads, keeping per-frame latencies only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numba
import numpy as np

from planner.arrivals import Arrivals, arrivals
from planner.engine_fast import _loop
from planner.policies import POLICIES
from planner.scenario import Scenario, Sharing
from planner.sharing import Timeline, cotenant_timeline, effective_table, horizon


@dataclass(frozen=True)
class Outcome:
    """The summary of one run that sweeps and recommendations need.

    ``latency_ms`` holds the GPU-side latency of every delivered frame; ``fps`` each
    session's delivered frame rate; counts are totals over sessions.
    """

    scenario: Scenario
    fps: np.ndarray
    arrived: int
    delivered: int
    overwritten: int
    expired: int
    busy_ms: float
    latency_ms: np.ndarray
    batch_sizes: np.ndarray  # batch_sizes[b] = how many batches of b frames ran

    @property
    def min_fps(self) -> float:
        return float(self.fps.min())

    @property
    def gpu_busy_fraction(self) -> float:
        return self.busy_ms / self.scenario.duration_ms


def _arrival_key(s: Scenario) -> tuple[object, ...]:
    return (s.sessions, s.session_fps, s.duration_s, s.phases, s.seed, s.jitter_ms)


def _timeline_key(s: Scenario) -> tuple[object, ...]:
    return (s.sharing.mode, s.sharing.cotenants, s.sharing.busy_period_ms, s.seed)


def run_many(scenarios: Sequence[Scenario]) -> list[Outcome]:
    """Simulate every scenario; outcomes come back in the same order."""
    if not scenarios:
        return []
    arrival_sets: dict[tuple[object, ...], int] = {}
    arrival_list: list[Arrivals] = []
    table_sets: dict[tuple[object, ...], int] = {}
    table_list: list[np.ndarray] = []
    timeline_sets: dict[tuple[object, ...], int] = {}
    timeline_list: list[Timeline] = []
    # A co-tenant timeline drawn further is the same process drawn longer (the prefix is
    # identical), so one timeline per seed covers every run of that seed.
    horizons: dict[tuple[object, ...], float] = {}
    jobs = np.zeros((len(scenarios), 4), np.int64)  # arrival set, table, timeline, pid
    params = np.zeros((len(scenarios), 3), np.float64)
    durations = np.zeros(len(scenarios), np.float64)
    tables_for: list[np.ndarray] = []
    for s in scenarios:
        key = (s.latency_ms, _sharing_table_key(s.sharing))
        if key not in table_sets:
            table_sets[key] = len(table_list)
            table_list.append(effective_table(np.asarray(s.latency_ms), s.sharing))
        tables_for.append(table_list[table_sets[key]])
        if s.sharing.mode == "time-slicing":
            tkey = _timeline_key(s)
            horizons[tkey] = max(horizons.get(tkey, 0.0), horizon(s, tables_for[-1]))
    for j, s in enumerate(scenarios):
        akey = _arrival_key(s)
        if akey not in arrival_sets:
            arrival_sets[akey] = len(arrival_list)
            arrival_list.append(arrivals(s))
        timeline_index = -1
        if s.sharing.mode == "time-slicing":
            tkey = _timeline_key(s)
            if tkey not in timeline_sets:
                line = cotenant_timeline(s.sharing, s.seed, horizons[tkey])
                timeline_sets[tkey] = len(timeline_list) if line is not None else -1
                if line is not None:
                    timeline_list.append(line)
            timeline_index = timeline_sets[tkey]
        table_key = (s.latency_ms, _sharing_table_key(s.sharing))
        jobs[j] = (arrival_sets[akey], table_sets[table_key], timeline_index,
                   POLICIES[s.policy].pid)  # fmt: skip
        params[j] = s.policy_params()
        durations[j] = s.duration_ms

    times, time_offsets = _concat([a.times for a in arrival_list])
    starts, start_offsets = _concat([a.start for a in arrival_list])
    width = max(t.size for t in table_list) + 1
    tables = np.zeros((len(table_list), width))
    for i, t in enumerate(table_list):
        tables[i, 1 : t.size + 1] = t
    edges, line_offsets = _concat([t.edges for t in timeline_list] or [np.zeros(1)])
    speed, _ = _concat([t.speed for t in timeline_list] or [np.ones(1)])
    work, _ = _concat([t.work for t in timeline_list] or [np.zeros(1)])

    sizes = np.array([a.times.size for a in arrival_list])[jobs[:, 0]]
    sessions = np.array([a.sessions for a in arrival_list])[jobs[:, 0]]
    latency_offsets = np.r_[0, np.cumsum(sizes)].astype(np.int64)
    session_offsets = np.r_[0, np.cumsum(sessions)].astype(np.int64)
    hist_offsets = np.r_[0, np.cumsum(sessions + 1)].astype(np.int64)
    latencies = np.empty(int(latency_offsets[-1]))
    counts = np.zeros((4, int(session_offsets[-1])), np.int64)
    histogram = np.zeros(int(hist_offsets[-1]), np.int64)
    delivered_frames = np.zeros(len(scenarios), np.int64)
    busy = np.zeros(len(scenarios))
    _run_jobs(
        times, time_offsets, starts, start_offsets, tables, edges, speed, work, line_offsets,
        jobs, params, durations, latency_offsets, session_offsets, hist_offsets,
        latencies, counts, histogram, delivered_frames, busy,
    )  # fmt: skip

    outcomes = []
    for j, s in enumerate(scenarios):
        lo, hi = session_offsets[j], session_offsets[j + 1]
        arrived, delivered, overwritten, expired = (counts[k, lo:hi] for k in range(4))
        first = latency_offsets[j]
        outcomes.append(
            Outcome(
                scenario=s,
                fps=delivered / s.duration_s,
                arrived=int(arrived.sum()),
                delivered=int(delivered.sum()),
                overwritten=int(overwritten.sum()),
                expired=int(expired.sum()),
                busy_ms=float(busy[j]),
                latency_ms=latencies[first : first + delivered_frames[j]],
                batch_sizes=histogram[hist_offsets[j] : hist_offsets[j + 1]],
            )
        )
    return outcomes


def _sharing_table_key(sharing: Sharing) -> tuple[object, ...]:
    """What of the sharing mode changes the latency table (time-slicing does not)."""
    if sharing.mode in ("mps", "mig"):
        return (sharing.mode, sharing.mps_share, sharing.mig_slices, sharing.mig_total,
                sharing.mig_derived)  # fmt: skip
    return ("exclusive",)


def _concat(arrays: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    offsets = np.r_[0, np.cumsum([a.size for a in arrays])].astype(np.int64)
    return np.concatenate(arrays), offsets


@numba.njit(cache=True, parallel=True)
def _run_jobs(  # type: ignore[no-untyped-def]
    times, time_offsets, starts, start_offsets, tables, edges, speed, work, line_offsets,
    jobs, params, durations, latency_offsets, session_offsets, hist_offsets,
    latencies, counts, histogram, delivered_frames, busy,
):  # fmt: skip
    for j in numba.prange(jobs.shape[0]):
        a, t, line, pid = jobs[j, 0], jobs[j, 1], jobs[j, 2], jobs[j, 3]
        job_times = times[time_offsets[a] : time_offsets[a + 1]]
        job_start = starts[start_offsets[a] : start_offsets[a + 1]]
        n = job_start.size - 1
        slicing = line >= 0
        if slicing:
            lo, hi = line_offsets[line], line_offsets[line + 1]
            job_edges, job_speed, job_work = edges[lo:hi], speed[lo:hi], work[lo:hi]
        else:
            job_edges, job_speed, job_work = edges[:1], speed[:1], work[:1]
        result = _loop(job_times, job_start, durations[j], tables[t], pid, params[j], slicing,
                       job_edges, job_speed, job_work)  # fmt: skip
        frames, batches, frame_latency = result[0], result[1], result[6]
        batch_start, batch_end, batch_size, job_counts = result[7], result[8], result[9], result[10]
        first = latency_offsets[j]
        latencies[first : first + frames] = frame_latency[:frames]
        delivered_frames[j] = frames
        s0 = session_offsets[j]
        for k in range(4):
            counts[k, s0 : s0 + n] = job_counts[k]
        # Accumulate in the job's own memory and write once: threads writing neighbouring
        # slots of a shared array at every batch would fight over cache lines.
        sizes = np.zeros(n + 1, np.int64)
        spent = 0.0
        for b in range(batches):
            sizes[batch_size[b]] += 1
            spent += min(batch_end[b], durations[j]) - batch_start[b]
        histogram[hist_offsets[j] : hist_offsets[j] + n + 1] = sizes
        busy[j] = spent
