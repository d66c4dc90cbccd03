"""``planner bench --only study``: cells per second of a study on one process, on the
local process pool and on a local Ray with as many workers, as ratios."""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from planner.bench.registry import Figures, section

# 3 curves x 4 budgets x 2 floors x 2 policy choices: 48 cells of a few tenths of a second.
BENCH_STUDY: dict[str, Any] = {
    "name": "bench",
    "curves": {"filters": [{"model": "ball-detector", "precision": "fp16"}]},
    "fixed": {"seeds": 4, "duration_s": 10},
    "axes": {
        "budget_ms": [30, 40, 50, 80],
        "min_fps": [25, 28.5],
        "policies": ["all", "batch-all"],
    },
}


def _timed(run: Callable[[Callable[[Any], None]], Any]) -> dict[str, float]:
    """Wall time of a whole run, and the steady rate between its first and last cell."""
    stamps: list[float] = []
    start = time.perf_counter()
    run(lambda _result: stamps.append(time.perf_counter()))
    wall = time.perf_counter() - start
    steady = (len(stamps) - 1) / (stamps[-1] - stamps[0]) if len(stamps) > 2 else 0.0
    return {"wall_s": wall, "cells_per_s": len(stamps) / wall, "steady_cells_per_s": steady,
            "first_cell_s": stamps[0] - start if stamps else wall}  # fmt: skip


@section("study")
def bench_study(progress: Callable[[str], None]) -> Figures:
    """The same 48-cell study on one process (one thread), the local pool and local Ray."""
    from planner.sim import ensemble
    from planner.store.repository import Store
    from planner.studies.run import default_workers, evaluate, prepare, run_study
    from planner.studies.study import study_from_dict

    study = study_from_dict(BENCH_STUDY)
    workers = default_workers()
    folder = Path(tempfile.mkdtemp(prefix="planner-study-bench-"))
    figures: dict[str, Any] = {"cells": 0, "workers": workers}
    try:
        with Store(folder / "one.duckdb") as store:
            _cells, jobs, curves, _refused = prepare(store, study)
        figures["cells"] = len(jobs)
        evaluate(jobs[:1], curves)  # compiled before timing
        progress(f"bench: study: {len(jobs)} cells on one process, one thread ...")
        ensemble.set_threads(1)
        try:

            def each(seen: Callable[[Any], None]) -> None:
                for job in jobs:
                    seen(evaluate([job], curves)[0])

            one = _timed(each)
        finally:
            ensemble.reset_threads()

        def engine(name: str) -> dict[str, float]:
            progress(f"bench: study: {len(jobs)} cells on the {name} engine, {workers} workers ...")
            with Store(folder / f"{name}.duckdb") as store:
                return _timed(lambda seen: run_study(store, study, engine=name,  # type: ignore[arg-type]
                                                     workers=workers, on_result=seen))  # fmt: skip

        pool = engine("local")
        figures.update({f"one_{k}": v for k, v in one.items()})
        figures.update({f"pool_{k}": v for k, v in pool.items()})
        figures["pool_speedup"] = pool["steady_cells_per_s"] / one["steady_cells_per_s"]
        try:
            import ray  # noqa: F401
        except ImportError:
            figures["ray"] = "not measured: needs the cluster extra (pip install -e '.[cluster]')"
            return figures
        saved = os.environ.get("HOME")
        os.environ["HOME"] = str(folder)  # Ray's files stay out of the user's home
        try:
            on_ray = engine("ray")
        finally:
            if saved is not None:
                os.environ["HOME"] = saved
        figures.update({f"ray_{k}": v for k, v in on_ray.items()})
        figures["ray_over_pool"] = on_ray["steady_cells_per_s"] / pool["steady_cells_per_s"]
        return figures
    finally:
        shutil.rmtree(folder, ignore_errors=True)
