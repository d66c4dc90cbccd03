"""Running a study: each cell not stored yet becomes a recommendation, computed on an
engine, and stored as it finishes (SPEC §5.4).

Engines (no home-made distribution):

- ``local`` (the default): a ``concurrent.futures`` process pool of ``workers`` processes
  (default: one per core), started with ``spawn``. Each worker gets the study's fitted
  curves once, through the pool's initializer, and runs its simulations on one thread,
  so the pool and the simulator's own threads do not oversubscribe the cores. A worker
  ends when this process does, however it ends (``kill -9`` included): it would
  otherwise wait for work forever, since it holds the pool's queues open itself.
- ``here``: this process, one cell after another, under a ``planner.sim.work.Work``
  (``work``): each chunk of simulation is admitted against its budget, run in one of
  the process's turns and counted, so a study a dashboard page starts shares the
  server with the other visitors chunk by chunk and stops at the next chunk when its
  budget runs out or its visitor leaves (``on_chunk`` raising). No worker is started.
- ``ray``: an existing Ray cluster (``address``) or a local Ray started for the run.
  The curves go into Ray's object store once; each task computes a small chunk of cells
  with one CPU; results are taken with ``ray.wait`` as they complete. Ray is imported
  only when this engine is chosen (``pip install -e '.[cluster]'``).

Only this process (the driver) writes the store, in short transactions as cells finish,
so an interrupted study keeps every finished cell and a re-run computes only the rest. A
cell that fails (a ``PlannerError``: what its inputs make of it) is tried once more, then
stored with its error; any other exception is a fault of the run, not of a cell, and
stops it like Ctrl-C does, keeping what finished.
"""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Generator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field, fields
from typing import Any, Literal

from planner.curves.fit import FittedCurve
from planner.demand.profiles import DemandProfile
from planner.errors import BadInput, NotFound, PlannerError
from planner.measure.cluster import check_ray_address
from planner.plan.fleet import plan_fleet, plan_profile
from planner.plan.recommend import recommend
from planner.plan.request import Request
from planner.plan.resolve import plan_inputs
from planner.sim import ensemble
from planner.sim.work import Cancelled, OverBudget, Work
from planner.store.connection import uninterrupted
from planner.store.repository import Store
from planner.studies.store import CellResult, finished_keys, save_results, save_study
from planner.studies.study import Cell, Study, cells, outputs

Engine = Literal["local", "ray", "here"]
ENGINES: tuple[str, ...] = ("local", "ray")
"""The engines the command line offers; ``here`` is for callers with a ``Work``."""
CHUNK = 4
"""Cells per task: enough to amortise sending a task, few enough to balance the load."""
IN_FLIGHT = 4
"""Tasks in flight per worker: enough to keep every worker busy."""
_WRITE_EVERY_S = 1.0
_REQUEST_FIELDS = tuple(
    f.name for f in fields(Request) if f.name not in ("curve", "profile_curves")
)


@dataclass(frozen=True)
class Job:
    """One cell as a worker needs it: its key, the ids of its curves (the whole card's,
    and any curves measured on a MIG profile), every other field of its request, and the
    demand profile (resolved by the driver) its fleet over a day is sized on, if any."""

    key: str
    curve: str
    profiles: tuple[tuple[str, str], ...]
    request: tuple[tuple[str, Any], ...]
    demand: DemandProfile | None = None
    lead_time_min: float = 0.0


@dataclass
class Progress:
    """Where a study run stands; ``rate`` in cells per second, ``eta_s`` to the end."""

    total: int
    skipped: int
    done: int = 0
    failed: int = 0
    started: float = field(default_factory=time.monotonic)

    @property
    def rate(self) -> float:
        elapsed = time.monotonic() - self.started
        return self.done / elapsed if elapsed > 0 else 0.0

    @property
    def eta_s(self) -> float | None:
        left = self.total - self.skipped - self.done
        return left / self.rate if self.rate > 0 else None


@dataclass(frozen=True)
class Summary:
    """What a study run did (``--json`` prints ``as_dict``)."""

    study: str
    engine: str
    workers: int
    cells: int
    skipped: int
    computed: int
    failed: int
    simulations: int
    elapsed_s: float
    interrupted: bool = False

    def as_dict(self) -> dict[str, Any]:
        return {
            "study": self.study,
            "engine": self.engine,
            "workers": self.workers,
            "cells": self.cells,
            "already_stored": self.skipped,
            "computed": self.computed,
            "failed": self.failed,
            "simulations": self.simulations,
            "elapsed_s": self.elapsed_s,
            "cells_per_s": self.computed / self.elapsed_s if self.elapsed_s > 0 else None,
            "interrupted": self.interrupted,
        }


MAX_WORKERS_PER_CORE = 4
"""The most study workers per core a run on this machine takes."""


def default_workers() -> int:
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1)


# ---------------------------------------------------------------------------------------
# Workers: the same function on both engines.

_CURVES: dict[str, FittedCurve] = {}


_PR_SET_PDEATHSIG = 1
_PARENT_CHECK_S = 1.0


def _start_worker(curves: dict[str, FittedCurve], parent: int) -> None:
    """A pool worker's initializer: the curves, once; simulations on one thread; an end
    when the ``parent`` process (the driver) ends; and Ctrl-C left to the driver, which
    stops the workers itself (a worker interrupted inside the pool's queues can leave
    their locks held and the pool's shutdown waiting forever)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _follow_parent(parent)
    _CURVES.clear()
    _CURVES.update(curves)
    ensemble.set_threads(1)


def _follow_parent(parent: int) -> None:
    """End this process when ``parent`` ends, so that a driver killed with ``kill -9``
    or SIGTERM leaves no idle workers behind.

    On Linux the kernel sends SIGTERM when the parent goes (``PR_SET_PDEATHSIG``; strictly
    when the driver's thread that started this worker ends, which is the thread running
    the study, so never while the pool is in use). Elsewhere, and as well, a thread checks
    once a second whether this process has been handed to another parent. A parent that
    went before either was set up is caught by the first check.
    """
    if sys.platform.startswith("linux"):
        try:
            prctl = ctypes.CDLL(None, use_errno=True).prctl
            zero = ctypes.c_ulong(0)
            prctl(_PR_SET_PDEATHSIG, ctypes.c_ulong(signal.SIGTERM), zero, zero, zero)
        except (OSError, AttributeError):  # no prctl here: the thread below does it
            pass
    if os.getppid() != parent:
        os._exit(1)

    def watch() -> None:
        while True:
            time.sleep(_PARENT_CHECK_S)
            if os.getppid() != parent:
                os._exit(1)

    threading.Thread(target=watch, name="follow-parent", daemon=True).start()


def evaluate(jobs: Sequence[Job], curves: dict[str, FittedCurve]) -> list[CellResult]:
    """Recommend each job's cell; a cell's own failure becomes an ``error`` result (tried
    again by the driver), not an exception that loses the other cells of the chunk."""
    return [evaluate_one(job, curves, Work(budget=float("inf"))) for job in jobs]


def evaluate_one(job: Job, curves: dict[str, FittedCurve], account: Work) -> CellResult:
    """One cell's recommendation under ``account``. A failure of the cell, a
    ``PlannerError`` (what a person is told: its inputs do not fit together, its curve
    is gone, ...), becomes an ``error`` result. Anything else propagates: the account's
    own stops (OverBudget, Cancelled, and whatever its ``on_chunk`` raises) are not the
    cell's failure, and neither is a bug in the planner or the runner, which would fail
    every cell alike and must not be stored as if it were one cell's answer."""
    start = time.perf_counter()
    before = account.done
    try:
        request = Request(
            curve=curves[job.curve],
            profile_curves=tuple((name, curves[cid]) for name, cid in job.profiles),
            **dict(job.request),
        )
        result = recommend(request, work=account)
        day = plan_fleet(result, job.demand, job.lead_time_min)
        doc = {**outputs(result, day), "frames": account.done - before}
        if request.calibration is not None:
            doc["calibration"] = request.calibration.id
        return CellResult(job.key, "ok", doc, None, 1, time.perf_counter() - start)
    except (OverBudget, Cancelled):
        raise
    except PlannerError as exc:
        message = "; ".join(exc.problems)
        return CellResult(job.key, "error", {}, message[:2000], 1, time.perf_counter() - start)


def _evaluate_here(jobs: Sequence[Job]) -> list[CellResult]:
    return evaluate(jobs, _CURVES)


def _evaluate_remote(curves: dict[str, FittedCurve], jobs: Sequence[Job]) -> list[CellResult]:
    ensemble.set_threads(1)
    return evaluate(jobs, curves)


# ---------------------------------------------------------------------------------------
# The driver.


def prepare(
    store: Store, study: Study, preparing: Callable[[int, int], None] = lambda _d, _t: None
) -> tuple[list[Cell], list[Job], dict[str, FittedCurve], list[CellResult]]:
    """The study's cells, the jobs of those not stored yet, the curves they need, and the
    cells no plan can be made of (stored with their reason). BadInput for a bad study.
    ``preparing(done, total)`` is called every 500 cells."""
    with store.remembering():
        return _prepare(store, study, preparing)


def _prepare(
    store: Store, study: Study, preparing: Callable[[int, int], None]
) -> tuple[list[Cell], list[Job], dict[str, FittedCurve], list[CellResult]]:
    every = cells(store, study)
    done = finished_keys(store, [c.key for c in every])
    jobs: list[Job] = []
    curves: dict[str, FittedCurve] = {}
    refused: list[CellResult] = []
    seen: set[str] = set()
    # No transaction across the cells: each read holds the file for itself alone and,
    # remembered, is made once however many cells share the curve, card or calibration.
    for position, cell in enumerate(every, start=1):
        if position % 500 == 0:
            preparing(position, len(every))
        if cell.key in done or cell.key in seen:
            continue
        seen.add(cell.key)
        if cell.problems:
            refused.append(CellResult(cell.key, "error", {}, "; ".join(cell.problems), 1, 0.0))
            continue
        try:
            inputs = plan_inputs(cell.params, store)
            demand = plan_profile(cell.params, store)
        except (BadInput, NotFound) as exc:
            refused.append(CellResult(cell.key, "error", {}, "; ".join(exc.problems), 1, 0.0))
            continue
        request = inputs.request
        curves.setdefault(cell.curve_id, request.curve)
        profiles = []
        for name, fitted in request.profile_curves:
            ident = f"{cell.curve_id}:{name}"
            curves.setdefault(ident, fitted)
            profiles.append((name, ident))
        jobs.append(Job(cell.key, cell.curve_id, tuple(profiles),
                        tuple((f, getattr(request, f)) for f in _REQUEST_FIELDS),
                        demand, cell.params.lead_time_min))  # fmt: skip
    preparing(len(every), len(every))
    return every, jobs, curves, refused


def run_study(
    store: Store,
    study: Study,
    *,
    engine: Engine = "local",
    workers: int | None = None,
    ray_address: str | None = None,
    progress: Callable[[Progress], None] = lambda _p: None,
    on_result: Callable[[CellResult], None] = lambda _r: None,
    preparing: Callable[[int, int], None] = lambda _d, _t: None,
    work: Work | None = None,
) -> Summary:
    """Compute and store every cell of ``study`` not stored yet (see the module docs).

    ``engine="here"`` runs the cells in this process under ``work`` (required then):
    OverBudget or whatever stops the work ends the run, keeping every cell finished
    before it.

    ``progress`` is called as cells finish; raising from it (or Ctrl-C) stops the run,
    keeping every cell finished so far. ``on_result`` sees each stored result;
    ``preparing(done, total)`` is called while the cells are prepared (see ``prepare``).
    """
    if engine not in (*ENGINES, "here"):
        raise BadInput(f"engine {engine!r} is not one of {', '.join(ENGINES)}")
    if engine == "here" and work is None:
        raise BadInput("the here engine runs under a Work: pass work=")
    count = 1 if engine == "here" else default_workers() if workers is None else workers
    # Processes or CPUs on this machine (the local pool, or a Ray started for the run):
    # more than a few per core only oversubscribe it. An existing cluster may be larger.
    most = 4096 if engine == "ray" and ray_address else MAX_WORKERS_PER_CORE * default_workers()
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= most:
        raise BadInput(
            f"workers must be a whole number from 1 to {most}"
            + (f" ({MAX_WORKERS_PER_CORE} per core of this machine)" if most != 4096 else "")
        )
    if engine == "ray":
        _require_ray(ray_address)  # before anything is stored
    store.require_writable()
    every, jobs, curves, refused = prepare(store, study, preparing)
    save_study(store, study, every)
    state = Progress(total=len({c.key for c in every}), skipped=0)
    state.skipped = state.total - len(jobs) - len(refused)
    save_results(store, refused)
    state.done += len(refused)
    state.failed += len(refused)
    simulations = 0
    buffer: list[CellResult] = []
    last_write = time.monotonic()

    def flush() -> None:
        nonlocal last_write
        # Ctrl-C waits for the write: interrupted, DuckDB would drop the buffered cells.
        with uninterrupted():
            save_results(store, buffer)
            buffer.clear()
        last_write = time.monotonic()

    started = time.monotonic()

    def summary(interrupted: bool) -> Summary:
        computed = state.done - len(refused)
        elapsed = time.monotonic() - started
        return Summary(study.name, engine, count, state.total, state.skipped, computed,
                       state.failed, simulations, elapsed, interrupted)  # fmt: skip

    if engine == "here" and work is not None:
        results = _run_here(jobs, curves, work)
    else:
        runner = _run_local if engine == "local" else _run_ray
        results = runner(jobs, curves, count, ray_address)
    interrupted = False
    try:
        for result in results:
            buffer.append(result)
            state.done += 1
            if result.status != "ok":
                state.failed += 1
            simulations += int(result.outputs.get("simulations", 0))
            on_result(result)
            if len(buffer) >= 64 or time.monotonic() - last_write >= _WRITE_EVERY_S:
                flush()
            progress(state)
    except KeyboardInterrupt:
        interrupted = True
    finally:
        results.close()  # stops the pool or the Ray tasks at once, whatever stopped us
        try:
            flush()
        except KeyboardInterrupt:  # Ctrl-C during the last write, which finished first
            interrupted = True
    if interrupted:
        raise StudyInterrupted(summary(True))
    return summary(False)


class StudyInterrupted(Exception):
    """Ctrl-C stopped a study run; ``summary`` says what was stored before it."""

    def __init__(self, summary: Summary) -> None:
        self.summary = summary
        super().__init__("interrupted")


def _chunks(jobs: Sequence[Job], size: int = CHUNK) -> list[list[Job]]:
    return [list(jobs[i : i + size]) for i in range(0, len(jobs), size)]


def _run_here(
    jobs: Sequence[Job], curves: dict[str, FittedCurve], work: Work
) -> Generator[CellResult, None, None]:
    """The cells one after another in this process, every chunk under ``work``. A cell
    that fails is tried once more, like on the other engines."""
    for job in jobs:
        result = evaluate_one(job, curves, work)
        if result.status != "ok":
            result = _attempts(evaluate_one(job, curves, work), True)
        yield result


LOST_WORKER = (
    "a study worker process ended before its cells were done (killed, or out of memory?); "
    "the cells finished before it are stored, and running the study again computes the rest"
)


def _run_local(
    jobs: Sequence[Job], curves: dict[str, FittedCurve], workers: int, _address: str | None
) -> Generator[CellResult, None, None]:
    if not jobs:
        return
    context = multiprocessing.get_context("spawn")
    pool = ProcessPoolExecutor(
        max_workers=min(workers, len(jobs)),
        mp_context=context,
        initializer=_start_worker,
        initargs=(curves, os.getpid()),
    )
    retried: set[str] = set()
    queue = _chunks(jobs)
    queue.reverse()  # popped from the end, in the study's order
    by_key = {job.key: job for job in jobs}
    pending: set[Future[list[CellResult]]] = set()
    finished_all = False
    try:
        while queue or pending:
            # A bounded number of tasks in flight: the driver's bookkeeping stays small
            # however large the study, and an interrupted run leaves little queued.
            while queue and len(pending) < IN_FLIGHT * workers:
                pending.add(pool.submit(_evaluate_here, queue.pop()))
            finished, pending = wait(pending, return_when=FIRST_COMPLETED)
            for future in finished:
                for result in future.result():
                    if result.status != "ok" and result.key not in retried:
                        retried.add(result.key)
                        queue.append([by_key[result.key]])
                        continue
                    yield _attempts(result, result.key in retried)
        finished_all = True
    except BrokenProcessPool:  # a worker was killed: one line, not the pool's traceback
        raise PlannerError(LOST_WORKER) from None
    finally:
        # Stopped early (Ctrl-C, or the caller closed us): the chunks already handed to
        # the workers would still run to their end, and the interpreter's exit waits for
        # them, so the workers are ended now. The pool sees them go and cleans up.
        workers_now = [] if finished_all else list(pool._processes.values())
        pool.shutdown(wait=False, cancel_futures=True)
        for process in workers_now:
            process.terminate()


def _attempts(result: CellResult, retried: bool) -> CellResult:
    if not retried:
        return result
    return CellResult(result.key, result.status, result.outputs, result.error, 2,
                      result.elapsed_s)  # fmt: skip


def _require_ray(address: str | None) -> None:
    """BadInput unless Ray is installed and ``address`` (if given) is a cluster that answers."""
    try:
        import ray  # noqa: F401
    except ImportError:
        raise BadInput(
            "the ray engine needs Ray: pip install -e '.[cluster]' (or --engine local)"
        ) from None
    if address:
        check_ray_address(address)


def _run_ray(
    jobs: Sequence[Job], curves: dict[str, FittedCurve], workers: int, address: str | None
) -> Generator[CellResult, None, None]:
    if not jobs:
        return
    try:
        import ray
    except ImportError:
        raise BadInput(
            "the ray engine needs Ray: pip install -e '.[cluster]' (or --engine local)"
        ) from None
    started_here = False
    if not ray.is_initialized():
        environment = {"env_vars": {"NUMBA_NUM_THREADS": "1"}}
        if address:
            try:
                ray.init(address=address, runtime_env=environment, log_to_driver=False)
            except (ConnectionError, RuntimeError, ValueError) as exc:
                raise BadInput(
                    f"no Ray cluster answers at {address[:80]}: {str(exc)[:200]}"
                ) from None
        else:
            # A local instance for this run only, reachable from this machine alone.
            os.environ.setdefault("RAY_AUTH_MODE", "disabled")
            ray.init(num_cpus=workers, include_dashboard=False, runtime_env=environment,
                     log_to_driver=False)  # fmt: skip
        started_here = True
    try:
        curves_ref = ray.put(curves)  # once, shared by every task through the object store
        remote = ray.remote(num_cpus=1)(_evaluate_remote)
        by_key = {job.key: job for job in jobs}
        queue = _chunks(jobs)
        queue.reverse()
        pending: list[Any] = []
        retried: set[str] = set()
        capacity = IN_FLIGHT * max(workers, int(ray.cluster_resources().get("CPU", workers)))
        while queue or pending:
            while queue and len(pending) < capacity:
                pending.append(remote.remote(curves_ref, queue.pop()))
            ready, pending = ray.wait(pending, num_returns=1)
            for result in ray.get(ready[0]):
                if result.status != "ok" and result.key not in retried:
                    retried.add(result.key)
                    queue.append([by_key[result.key]])
                    continue
                yield _attempts(result, result.key in retried)
    finally:
        if started_here:
            ray.shutdown()
