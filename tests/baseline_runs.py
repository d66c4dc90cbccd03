"""Runs recorded before the worker's pipeline stages entered the simulator.

The scenario fields of SPEC §5.1 (network, pre and post stages, CPU threads, memory) all
default to values that must reproduce the first wave's results bit for bit. This module
defines a handful of runs — every policy, every sharing mode, jitter, overhead, a sweep
and a recommendation — and how each is summarised: every record array by a digest of its
bytes, every figure of the results as JSON (which round-trips floats exactly).
``tests/data/baseline_runs.json`` holds the summaries made by the code before the change
(``python -m tests.baseline_runs`` writes it); ``test_baseline_runs.py`` compares.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

from planner.curves.curve import Point
from planner.curves.fit import fit_curve
from planner.plan.recommend import recommend
from planner.plan.request import Criteria, Request
from planner.sim.policies import POLICIES
from planner.sim.scenario import Scenario, Sharing
from planner.sim.simulate import simulate
from planner.sim.sweep import sweep

DATA = Path(__file__).resolve().parent / "data" / "baseline_runs.json"

LAPTOP = (
    Point(1, 9.82), Point(2, 20.36), Point(3, 32.71), Point(4, 46.15), Point(8, 103.77),
    Point(16, 221.25),
)  # fmt: skip
CHEAP = (Point(1, 4.69), Point(4, 9.29))

# The record fields that existed before the change (new fields are not compared).
RECORD_FIELDS = (
    "frame_session", "frame_index", "frame_batch", "frame_arrival", "frame_latency",
    "batch_start", "batch_end", "batch_size", "arrived", "delivered", "overwritten",
    "expired", "pending",
)  # fmt: skip

SHARINGS = {
    "exclusive": Sharing(),
    "time-slicing": Sharing.of("time-slicing", cotenants=(0.9, 0.3), busy_period_ms=20.0),
    "mps": Sharing.of("mps", mps_share=40.0),
    "mig": Sharing.of("mig", mig_profile="3g.40gb", mig_slices=3, mig_total=7),
}


def _table(points: tuple[Point, ...]) -> tuple[float, ...]:
    return tuple(float(v) for v in fit_curve(points).table(64))


def scenarios() -> dict[str, Scenario]:
    """The recorded single runs, by name."""
    laptop, cheap = _table(LAPTOP), _table(CHEAP)
    out: dict[str, Scenario] = {}
    for policy in POLICIES:
        for mode, sharing in SHARINGS.items():
            out[f"{policy}/{mode}"] = Scenario(
                latency_ms=laptop if mode == "exclusive" else cheap,
                sessions=5 if mode == "exclusive" else 14,
                policy=policy,
                duration_s=3.0,
                seed=7,
                sharing=sharing,
            )
        out[f"{policy}/jitter+overhead"] = Scenario(
            latency_ms=cheap,
            sessions=20,
            policy=policy,
            fps=(30.0,) * 10 + (15.0,) * 10,
            duration_s=2.0,
            phases="even",
            seed=3,
            jitter_ms=4.0,
            overhead_ms=7.5,
            max_batch=6 if policy in ("max-batch", "triton") else None,
            slo_ms=35.0 if policy in ("aimd", "deadline") else None,
        )
    return out


def _digest(array: np.ndarray) -> str:
    return (
        f"{array.dtype.str}{list(array.shape)}:"
        + hashlib.sha256(np.ascontiguousarray(array).tobytes()).hexdigest()
    )


def summarise_run(scenario: Scenario) -> dict[str, Any]:
    results = simulate(scenario)
    return {
        "results": results.as_dict(),
        "records": {name: _digest(getattr(results.records, name)) for name in RECORD_FIELDS},
    }


def summarise_sweep() -> list[dict[str, Any]]:
    template = Scenario(latency_ms=_table(CHEAP), sessions=1, duration_s=2.0, overhead_ms=3.0)
    return [row.as_dict() for row in sweep(template, POLICIES, range(1, 13, 3), range(3))]


def summarise_recommendation() -> dict[str, Any]:
    request = Request(
        curve=fit_curve(LAPTOP),
        criteria=Criteria(budget_ms=60.0, overhead_ms=4.0),
        sharings=(SHARINGS["exclusive"], SHARINGS["time-slicing"], SHARINGS["mps"]),
        seeds=3,
        duration_s=5.0,
        max_sessions=12,
    )
    doc = recommend(request).as_dict()
    doc.pop("assumptions")  # prose, not results
    return doc


def summaries() -> dict[str, Any]:
    return {
        "runs": {name: summarise_run(s) for name, s in scenarios().items()},
        "sweep": summarise_sweep(),
        "recommendation": summarise_recommendation(),
    }


if __name__ == "__main__":
    DATA.parent.mkdir(parents=True, exist_ok=True)
    DATA.write_text(json.dumps(summaries(), indent=1, sort_keys=True) + "\n", encoding="utf-8")
    sys.stderr.write(f"wrote {DATA}\n")
