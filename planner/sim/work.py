"""Bounded, interruptible work: a frame budget, cancellation and turns for the simulations
one request starts.

A dashboard serves everyone from one process, and a shared link can ask for any amount of
simulation (64 seeds of 600 s at 256 sessions is hours of work). So every simulation a
page starts runs under a ``Work``:

- a **budget** of simulated frames (``PLANNER_BUDGET_FRAMES``, default
  ``DEFAULT_BUDGET_FRAMES``): work that would go past it stops with ``OverBudget`` before
  the chunk that would cross it, and the page says how to run it from the command line,
  which has no budget;
- **chunks** of at most ``CHUNK_FRAMES`` frames (about half a second on one core; one run
  is never split, and the scenario's own limit keeps a run under a few seconds), between
  which ``checkpoint`` runs: compiled code cannot be interrupted, so this is where work
  nobody waits for any more stops (``cancel()``, or the dashboard's own stop signal
  raised from ``on_chunk``);
- **turns**: each chunk runs while holding one of ``turns()`` (one by default,
  ``PLANNER_CONCURRENT_WORK``), handed out in arrival order, so one visitor's long plan
  interleaves with everyone else's chunk by chunk instead of starving them.

The command line runs without a ``Work`` (no budget, no turns).
"""

from __future__ import annotations

import collections
import math
import os
import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from planner.errors import BadInput, PlannerError

DEFAULT_BUDGET_FRAMES = 400_000_000
"""About 18 CPU-seconds (14 s on two shared cores) for the crafted link of
docs/reliability.md; ``scripts/measure_budget.py`` measures it on a machine."""
CHUNK_FRAMES = 10_000_000


class OverBudget(PlannerError):
    """The work needs more simulated frames than its budget allows."""

    def __init__(self, done: int, budget: float) -> None:
        self.done, self.budget = done, budget
        super().__init__(
            f"it needs more simulation than this server allows for one request: it stopped "
            f"after {done / 1e6:,.0f} million frames of its {budget / 1e6:,.0f} million budget"
        )


BUDGET_ENV = "PLANNER_BUDGET_FRAMES"
TURNS_ENV = "PLANNER_CONCURRENT_WORK"


class Cancelled(Exception):
    """The work was cancelled; raised at the next checkpoint."""


def budget_frames() -> float:
    """The operator's budget: ``PLANNER_BUDGET_FRAMES`` (a number of frames above 0, or
    ``inf`` for none), else ``DEFAULT_BUDGET_FRAMES``. Anything else is refused by name:
    a typo must not quietly become the default or, worse, no budget at all."""
    text = os.environ.get(BUDGET_ENV, "").strip()
    if not text:
        return float(DEFAULT_BUDGET_FRAMES)
    if text.lower() in ("inf", "infinity", "none"):
        return math.inf
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):  # 1e400 reads as inf: not what was meant
        raise BadInput(
            f"{BUDGET_ENV}={text[:40]!r} is not a number of frames above 0 (or inf for no budget)"
        )
    return value


@dataclass
class Work:
    """The account of one computation: frames done against a budget, chunks run, and
    whether it was cancelled. Pass it down to ``recommend``, ``option_sweep`` or
    ``pooled_runs``; ``on_chunk`` is called after every chunk (a progress bar, say)."""

    budget: float = field(default_factory=budget_frames)
    on_chunk: Callable[[Work], None] | None = None
    done: int = 0
    chunks: int = 0
    _cancelled: threading.Event = field(default_factory=threading.Event, repr=False)

    def cancel(self) -> None:
        """Stop at the next checkpoint (from any thread)."""
        self._cancelled.set()

    @property
    def cancelled(self) -> bool:
        return self._cancelled.is_set()

    def admit(self, frames: int) -> None:
        """Before a chunk of ``frames``: OverBudget when it would cross the budget."""
        self.checkpoint_cancel()
        if self.done + frames > self.budget:
            raise OverBudget(self.done, self.budget)

    def finished(self, frames: int) -> None:
        """After a chunk: count it, then let ``on_chunk`` report or stop the work."""
        self.done += frames
        self.chunks += 1
        self.checkpoint_cancel()
        if self.on_chunk is not None:
            self.on_chunk(self)

    def checkpoint_cancel(self) -> None:
        if self._cancelled.is_set():
            raise Cancelled()

    @contextmanager
    def turn(self) -> Iterator[None]:
        """Hold one of the process's turns while a chunk runs."""
        with _turns().held():
            yield


def chunks(sizes: list[int], limit: int = CHUNK_FRAMES) -> list[range]:
    """Consecutive runs grouped so each group's frames stay within ``limit`` (a run
    larger than that is a group of its own)."""
    groups: list[range] = []
    start, total = 0, 0
    for i, size in enumerate(sizes):
        if i > start and total + size > limit:
            groups.append(range(start, i))
            start, total = i, 0
        total += size
    if start < len(sizes):
        groups.append(range(start, len(sizes)))
    return groups


class _Turns:
    """A first-come, first-served counting semaphore."""

    def __init__(self, count: int) -> None:
        self._count = count
        self._free = count
        self._queue: collections.deque[object] = collections.deque()
        self._condition = threading.Condition()

    @contextmanager
    def held(self) -> Iterator[None]:
        ticket = object()
        with self._condition:
            self._queue.append(ticket)
            while not (self._free and self._queue[0] is ticket):
                self._condition.wait()
            self._queue.popleft()
            self._free -= 1
            self._condition.notify_all()
        try:
            yield
        finally:
            with self._condition:
                self._free += 1
                self._condition.notify_all()


def turns() -> int:
    """How many chunks of work run at once in this process: ``PLANNER_CONCURRENT_WORK``,
    a whole number from 1 to 64, default 1 (each chunk already uses every core)."""
    text = os.environ.get(TURNS_ENV, "").strip()
    if not text:
        return 1
    if not re.fullmatch(r"[0-9]{1,2}", text) or not 1 <= int(text) <= 64:
        raise BadInput(f"{TURNS_ENV}={text[:40]!r} is not a whole number from 1 to 64")
    return int(text)


_TURNS: _Turns | None = None
_TURNS_GUARD = threading.Lock()


def _turns() -> _Turns:
    """This process's turns, made on first use (so a bad setting is one message where
    work starts, not an error while importing)."""
    global _TURNS
    with _TURNS_GUARD:
        if _TURNS is None:
            _TURNS = _Turns(turns())
        return _TURNS


def frames_of(total_fps: float, duration_s: float) -> int:
    """Frames a run of sessions sending ``total_fps`` for ``duration_s`` simulates."""
    return math.ceil(total_fps * duration_s)
