"""What the reference worker records: every frame of a run, one row each (SPEC §5.2).

Columns (times in ms from the start of the run, NaN where a frame never got there):

- ``session``, ``frame`` (its position among the session's frames), ``capture_ms`` (the
  scheduled capture time, the simulator's own), ``arrival_ms`` (scheduled arrival at the
  worker: capture + network), ``arrived_ms`` (when the worker actually handled the
  arrival: its lateness is ``arrived_ms - arrival_ms``);
- ``pre_start_ms``, ``pre_end_ms`` (its pre job on a CPU thread), ``ready_ms`` (when it
  became pending for the device);
- ``batch`` (-1 if none), ``batch_size``, ``batch_start_ms``, ``batch_end_ms``;
- ``post_start_ms``, ``post_end_ms`` (its post job; without one, the batch's end);
- ``status``: delivered, overwritten, expired or pending.

``records()`` turns a run into the simulator's ``planner.sim.records.Records``, so the
measured figures come from the same function as the predicted ones
(``planner.sim.results.summarise``): a measured run and a simulated one are summarised by one
piece of code and cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from planner.errors import BadInput
from planner.sim.records import Records
from planner.sim.results import Results, summarise
from planner.sim.scenario import Scenario

PENDING, DELIVERED, OVERWRITTEN, EXPIRED = 0, 1, 2, 3
STATUSES: tuple[str, ...] = ("pending", "delivered", "overwritten", "expired")
"""Status names by code: every frame ends in exactly one of them."""

TIME_COLUMNS: tuple[str, ...] = (
    "capture_ms",
    "arrival_ms",
    "arrived_ms",
    "pre_start_ms",
    "pre_end_ms",
    "ready_ms",
    "batch_start_ms",
    "batch_end_ms",
    "post_start_ms",
    "post_end_ms",
)
COLUMNS: tuple[str, ...] = (
    "session",
    "frame",
    "capture_ms",
    "arrival_ms",
    "arrived_ms",
    "pre_start_ms",
    "pre_end_ms",
    "ready_ms",
    "batch",
    "batch_size",
    "batch_start_ms",
    "batch_end_ms",
    "post_start_ms",
    "post_end_ms",
    "status",
)
"""The record columns, in the order CSV files and the store keep them."""


@dataclass(frozen=True)
class WorkerRun:
    """Every frame of one run of the reference worker, as columns (see the module
    docstring); ``scenario`` is what it served."""

    scenario: Scenario
    session: np.ndarray
    frame: np.ndarray
    capture_ms: np.ndarray
    arrival_ms: np.ndarray
    arrived_ms: np.ndarray
    pre_start_ms: np.ndarray
    pre_end_ms: np.ndarray
    ready_ms: np.ndarray
    batch: np.ndarray
    batch_size: np.ndarray
    batch_start_ms: np.ndarray
    batch_end_ms: np.ndarray
    post_start_ms: np.ndarray
    post_end_ms: np.ndarray
    status: np.ndarray

    @property
    def frames(self) -> int:
        return int(self.session.size)

    @property
    def lateness_ms(self) -> np.ndarray:
        """How late the worker handled each arrival it handled (ms; the frames that
        reached it after the end of the run are not handled and are left out)."""
        handled = ~np.isnan(self.arrived_ms)
        return self.arrived_ms[handled] - self.arrival_ms[handled]

    def count(self, status: int) -> int:
        return int(np.count_nonzero(self.status == status))

    def columns(self) -> dict[str, np.ndarray]:
        """The records as named columns (``status`` as its name), in ``COLUMNS`` order."""
        out = {name: getattr(self, name) for name in COLUMNS}
        out["status"] = np.array([STATUSES[s] for s in self.status.tolist()], dtype=object)
        return out

    def records(self) -> Records:
        """The run as the simulator's records (``planner.sim.records.Records``)."""
        return to_records(self)

    def results(self, percentile: float = 99.0) -> Results:
        """The run's figures, computed exactly as a simulation's are."""
        return summarise(self.scenario, self.records(), percentile)


def from_columns(scenario: Scenario, columns: Mapping[str, Any]) -> WorkerRun:
    """A run from named columns (as ``WorkerRun.columns`` gives them, or read back from a
    CSV file or the store): ``status`` may be names or codes. BadInput when a column is
    missing, the columns differ in length, or a status is unknown."""
    missing = [name for name in COLUMNS if name not in columns]
    if missing:
        raise BadInput(f"worker records lack the column(s) {', '.join(missing)}")
    lengths = {len(columns[name]) for name in COLUMNS}
    if len(lengths) > 1:
        raise BadInput("the worker record columns differ in length")
    values: dict[str, np.ndarray] = {}
    for name in COLUMNS:
        raw = columns[name]
        if name == "status":
            values[name] = _statuses(raw)
        elif name in TIME_COLUMNS:
            values[name] = np.asarray(raw, dtype=np.float64)
        else:
            values[name] = np.asarray(raw, dtype=np.int64)
    return WorkerRun(scenario=scenario, **values)


def _statuses(raw: Any) -> np.ndarray:
    codes = {name: code for code, name in enumerate(STATUSES)}
    out = np.empty(len(raw), np.int8)
    for i, value in enumerate(raw):
        if isinstance(value, int | np.integer) and 0 <= int(value) < len(STATUSES):
            out[i] = int(value)
        elif str(value).strip().lower() in codes:
            out[i] = codes[str(value).strip().lower()]
        else:
            raise BadInput(
                f"worker record {i + 1}: status {str(value)[:30]!r} is not one of "
                f"{', '.join(STATUSES)}"
            )
    return out


def empty_run(scenario: Scenario, session: np.ndarray, frame: np.ndarray) -> WorkerRun:
    """A run's columns before anything happened: every frame pending, every time NaN."""
    n = session.size
    times = {name: np.full(n, np.nan) for name in TIME_COLUMNS}
    return WorkerRun(
        scenario=scenario,
        session=session.astype(np.int64),
        frame=frame.astype(np.int64),
        batch=np.full(n, -1, np.int64),
        batch_size=np.zeros(n, np.int64),
        status=np.full(n, PENDING, np.int8),
        **times,
    )


def to_records(run: WorkerRun) -> Records:
    """The simulator's records of a measured run.

    Delivered frames in the order their batches ran; ``frame_arrival`` is the scheduled
    arrival (capture + network), so end-to-end latency (post end + network + overhead -
    capture) includes how late the worker handled the arrival; ``frame_latency`` is the
    batch's end minus ``ready_ms`` (GPU side). CPU jobs: one pre job per frame whose pre
    work started (ready when its frame arrived) and one post job per frame whose post
    work started (ready at its batch's end), in start order.
    """
    scenario = run.scenario
    n = scenario.sessions
    delivered = np.flatnonzero(run.status == DELIVERED)
    order = delivered[np.lexsort((run.session[delivered], run.batch[delivered]))]
    batch_ids, first = np.unique(run.batch[order], return_index=True)
    renumber = np.searchsorted(batch_ids, run.batch[order])
    pre = np.flatnonzero(~np.isnan(run.pre_start_ms))
    post = np.flatnonzero(~np.isnan(run.post_start_ms))
    kinds = np.r_[np.ones(pre.size, np.int8), np.zeros(post.size, np.int8)]
    ready = np.r_[run.arrived_ms[pre], run.batch_end_ms[post]]
    start = np.r_[run.pre_start_ms[pre], run.post_start_ms[post]]
    jobs = np.argsort(start, kind="stable")

    def per_session(status: int) -> np.ndarray:
        return np.bincount(run.session[run.status == status], minlength=n).astype(np.int64)

    return Records(
        frame_session=run.session[order],
        frame_index=run.frame[order],
        frame_batch=renumber.astype(np.int64),
        frame_arrival=run.arrival_ms[order],
        frame_ready=run.ready_ms[order],
        frame_latency=run.batch_end_ms[order] - run.ready_ms[order],
        frame_done=run.post_end_ms[order],
        batch_start=run.batch_start_ms[order][first],
        batch_end=run.batch_end_ms[order][first],
        batch_size=run.batch_size[order][first],
        arrived=np.bincount(run.session, minlength=n).astype(np.int64),
        delivered=per_session(DELIVERED),
        overwritten=per_session(OVERWRITTEN),
        expired=per_session(EXPIRED),
        pending=per_session(PENDING),
        job_kind=kinds[jobs],
        job_ready=ready[jobs],
        job_start=start[jobs],
    )
