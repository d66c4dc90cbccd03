"""The scenario an imported load test is predicted on: the file's run (its session count
and policy) on a curve, with the scenario options given and the library's defaults for the
rest, and a calibration applied where one is asked for."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from planner.curves.curve import Curve
from planner.curves.fit import fit_curve
from planner.plan.request import run_scenario
from planner.sim.calibration import Calibration
from planner.sim.policies import POLICIES
from planner.sim.scenario import Scenario, Sharing
from planner.sim.stages import STAGE_FIELDS, WorkerStages


def imported_scenario(
    curve: Curve,
    sessions: int,
    policy: str,
    values: Mapping[str, Any],
    calibration: Calibration | None = None,
) -> Scenario:
    """``sessions`` sessions under ``policy`` on ``curve``'s fitted table, with the
    scenario's options in ``values`` (one frame rate ``fps``; the stages' fields become its
    ``WorkerStages``; ``queue`` and its settings what the server keeps of a session's
    frames; the policy's batcher settings, else those of the server the curve was measured
    on), built as a plan's or a simulation's run is (``planner.plan.request.run_scenario``:
    the curve's per-request cost, or ``calibration`` where given)."""
    options = dict(values)
    if "fps" in options:
        options["fps"] = (options["fps"],)
    options["stages"] = WorkerStages(
        **{name: options.pop(name) for name in STAGE_FIELDS if name in options}
    )
    for name, value in curve.batcher.items():  # the server the curve was measured on
        if name in POLICIES[policy].params:
            options.setdefault(name, int(value) if name == "max_batch" else value)
    return run_scenario(
        fit_curve(curve.points),
        "central",
        policy,
        sessions,
        Sharing(),
        upto=64,
        per_request_ms=curve.per_request_ms,
        calibration=calibration,
        spread=False,
        memory_batch_limit=None,
        overhead_ms=float(options.pop("overhead_ms", 0.0)),
        **options,
    )
