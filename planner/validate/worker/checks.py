"""The consistency every record set of the reference worker must have.

``problems(run)`` lists what is wrong (empty: nothing). It checks what holds for any run
of any worker that follows SPEC §3.3 and §5.1, however fast or slow the machine is:

- every scheduled frame appears exactly once and ends in exactly one status (delivered,
  overwritten, expired or pending), and only delivered frames belong to a batch;
- no session is delivered more frames than it sent, so its delivered frame rate is at
  most its source rate;
- each frame went through its stages in order (captured, arrived, pre work, pending,
  batch, post work), so each delivered frame's latency is at least its batch's duration;
- one batch at a time, none dispatched at or after the end, each of one size with at most
  one frame per session, within the policy's limits (one frame for oldest-first and
  round-robin, B for max-batch and triton, the memory limit for all);
- at most ``cpu_workers`` CPU jobs at once, and no pre job started at or after the end.

Timing figures are not checked here: they are measurements, reported, never asserted.
"""

from __future__ import annotations

import numpy as np

from planner.sim.policies import POLICIES
from planner.validate.worker.frames import DELIVERED, PENDING, STATUSES, WorkerRun
from planner.validate.worker.schedule import schedule

_SLACK_MS = 1e-6
"""Rounding allowance when comparing two recorded times."""


def problems(run: WorkerRun) -> list[str]:
    """Everything inconsistent in ``run`` (see the module docstring)."""
    out: list[str] = []
    out += _accounting(run)
    if out:
        return out  # the other checks index frames by these columns
    out += _stages(run)
    out += _batches(run)
    out += _cpu(run)
    return out


def _accounting(run: WorkerRun) -> list[str]:
    s = run.scenario
    plan = schedule(s)
    out = []
    if run.frames != plan.frames:
        return [f"the records hold {run.frames} frames; the schedule has {plan.frames}"]
    # Each (session, frame) as one number; the records must hold each scheduled one once.
    width = int(max(plan.frame.max(initial=0), run.frame.max(initial=0))) + 1
    keys = run.session * width + run.frame
    expected = np.sort(plan.session * width + plan.frame)
    found = np.searchsorted(expected, keys).clip(0, max(plan.frames - 1, 0))
    known = expected[found] == keys if plan.frames else np.zeros(0, np.bool_)
    seen = np.bincount(found[known], minlength=plan.frames)
    if not known.all() or np.any(seen != 1):
        out.append(
            f"{int(np.sum(seen != 1)) + int(np.sum(~known))} scheduled frames are recorded "
            "other than exactly once"
        )
    elif not np.array_equal(
        run.capture_ms, plan.capture_ms[np.argsort(plan.session * width + plan.frame)][found]
    ):
        out.append("the recorded capture times are not the schedule's, bit for bit")
    unknown = ~np.isin(run.status, np.arange(len(STATUSES)))
    if unknown.any():
        out.append(f"{int(unknown.sum())} frames have no known status")
    delivered = run.status == DELIVERED
    if np.any(run.batch[delivered] < 0):
        out.append("a delivered frame belongs to no batch")
    if np.any(run.batch[~delivered] >= 0):
        out.append("a frame that was not delivered belongs to a batch")
    late = run.arrival_ms >= s.duration_ms
    if np.any(run.status[late] != PENDING):
        out.append("a frame that reached the worker after the end is not pending")
    fps = np.asarray(s.session_fps)
    for session in range(s.sessions):
        sent = int(np.count_nonzero(run.session == session))
        got = int(np.count_nonzero(delivered & (run.session == session)))
        if got > sent:
            out.append(f"session {session} was delivered {got} frames but sent {sent}")
        elif got / s.duration_s > fps[session] + 1.0 / s.duration_s:
            out.append(
                f"session {session} got {got / s.duration_s:.2f} fps, above its source's "
                f"{fps[session]:g}"
            )
    return out


def _before(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Where both times are known and ``a`` is later than ``b``."""
    known = ~(np.isnan(a) | np.isnan(b))
    return known & (a > b + _SLACK_MS)


def _stages(run: WorkerRun) -> list[str]:
    s = run.scenario
    out = []
    pairs = (
        ("capture_ms", "arrival_ms", "arrives before it is captured"),
        ("arrival_ms", "arrived_ms", "is handled before it is due"),
        ("arrived_ms", "pre_start_ms", "starts its pre work before it arrives"),
        ("pre_start_ms", "pre_end_ms", "ends its pre work before starting it"),
        ("pre_end_ms", "ready_ms", "is pending for the device before its pre work ends"),
        ("arrived_ms", "ready_ms", "is pending for the device before it arrives"),
        ("ready_ms", "batch_start_ms", "joins a batch before it is pending"),
        ("batch_start_ms", "batch_end_ms", "is in a batch that ends before it starts"),
        ("batch_end_ms", "post_start_ms", "starts its post work before its batch ends"),
        ("post_start_ms", "post_end_ms", "ends its post work before starting it"),
        ("batch_end_ms", "post_end_ms", "is done before its batch ends"),
    )
    for early, later, what in pairs:
        wrong = _before(getattr(run, early), getattr(run, later))
        if wrong.any():
            out.append(f"{int(wrong.sum())} frame(s) {what}")
    delivered = run.status == DELIVERED
    for name in ("ready_ms", "batch_start_ms", "batch_end_ms", "post_end_ms"):
        if np.isnan(getattr(run, name)[delivered]).any():
            out.append(f"a delivered frame has no {name}")
    latency = run.post_end_ms[delivered] - run.ready_ms[delivered]
    duration = run.batch_end_ms[delivered] - run.batch_start_ms[delivered]
    if np.any(latency < duration - _SLACK_MS):
        out.append("a delivered frame's latency is shorter than its batch's duration")
    staged = s.stages.pre_ms > 0
    if not staged and np.isfinite(run.pre_start_ms).any():
        out.append("a frame has pre work in a scenario without a pre stage")
    started = ~np.isnan(run.pre_start_ms)
    if np.any(run.pre_start_ms[started] >= s.duration_ms):
        out.append("a pre job started at or after the end of the run")
    if staged and np.any(delivered & ~started):
        out.append("a delivered frame skipped its pre work")
    if s.stages.post_ms > 0 and np.isnan(run.post_start_ms[delivered]).any():
        out.append("a delivered frame skipped its post work")
    return out


def _batches(run: WorkerRun) -> list[str]:
    s = run.scenario
    out: list[str] = []
    delivered = np.flatnonzero(run.status == DELIVERED)
    if delivered.size == 0:
        return out
    ids = run.batch[delivered]
    batches, first, counts = np.unique(ids, return_index=True, return_counts=True)
    rows = delivered[first]
    sizes = run.batch_size[rows]
    if np.any(sizes != counts):
        out.append("a batch's recorded size differs from the frames it holds")
    for name in ("batch_start_ms", "batch_end_ms", "batch_size"):
        column = getattr(run, name)
        per_batch = column[rows]
        if np.any(column[delivered] != per_batch[np.searchsorted(batches, ids)]):
            out.append(f"frames of one batch disagree on {name}")
    pairs = run.session[delivered] + ids * (s.sessions + 1)
    if np.unique(pairs).size != pairs.size:
        out.append("a batch holds two frames of one session")
    start, end = run.batch_start_ms[rows], run.batch_end_ms[rows]
    order = np.argsort(start, kind="stable")
    if np.any(start[order][1:] < end[order][:-1] - _SLACK_MS):
        out.append("two batches ran on the device at once")
    if np.any(start >= s.duration_ms):
        out.append("a batch was dispatched at or after the end of the run")
    out += _limits(run, sizes)
    return out


def _limits(run: WorkerRun, sizes: np.ndarray) -> list[str]:
    s = run.scenario
    policy = POLICIES[s.policy]
    largest = s.sessions
    why = "the session count"
    if policy.one_at_a_time:
        largest, why = 1, f"{s.policy} runs one frame at a time"
    elif "max_batch" in policy.params:
        largest, why = int(s.param("max_batch")), f"{s.policy}'s batch limit B"
    if s.memory_batch_limit is not None and s.memory_batch_limit < largest:
        largest, why = s.memory_batch_limit, "the memory limit"
    if np.any(sizes < 1) or np.any(sizes > largest):
        return [f"a batch of {int(sizes.max())} frames exceeds {largest} ({why})"]
    return []


def _cpu(run: WorkerRun) -> list[str]:
    s = run.scenario
    starts = np.r_[run.pre_start_ms, run.post_start_ms]
    ends = np.r_[run.pre_end_ms, run.post_end_ms]
    known = ~np.isnan(starts)
    if not known.any():
        return []
    workers = s.stages.cpu_workers
    if workers < 1:
        return ["CPU jobs ran without a pool of CPU threads"]
    # +1 at each start, -1 at each end (an end before a start at the same time).
    times = np.r_[starts[known], ends[known]]
    steps = np.r_[np.ones(int(known.sum())), -np.ones(int(known.sum()))]
    order = np.lexsort((steps, times))
    busiest = int(np.max(np.cumsum(steps[order])))
    if busiest > workers:
        return [f"{busiest} CPU jobs ran at once on {workers} thread(s)"]
    return []
