"""The scenario an imported load test is predicted on: the file's run (its session count
and policy) on a curve, with the scenario options given and the library's defaults for the
rest, and a calibration applied where one is asked for."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from planner.curves.curve import Curve
from planner.curves.fit import fit_curve
from planner.sim.calibration import Calibration
from planner.sim.policies import POLICIES
from planner.sim.scenario import Scenario
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
    frames), and ``calibration`` applied where given."""
    options = dict(values)
    if "fps" in options:
        options["fps"] = (options["fps"],)
    options["stages"] = WorkerStages(
        **{name: options.pop(name) for name in STAGE_FIELDS if name in options}
    )
    upto = max(64, sessions)
    if options.get("queue") == "all" and "max_batch" in POLICIES[policy].params:
        # A server that queues every frame forms batches up to its largest, however many
        # sessions there are.
        upto = max(upto, int(options.get("max_batch") or POLICIES[policy].defaults["max_batch"]))
    table = tuple(float(v) for v in fit_curve(curve.points).table(upto))
    scenario = Scenario(latency_ms=table, sessions=sessions, policy=policy, **options)
    return scenario if calibration is None else calibration.apply(scenario)
