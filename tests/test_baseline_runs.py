"""Defaults reproduce the runs recorded before the worker's stages existed, bit for bit.

``tests/data/baseline_runs.json`` was written by ``python -m tests.baseline_runs`` on the
code before the pipeline stages and memory limits (SPEC §5.1) were added. Every figure
recorded then must come out identical now; figures added since are not compared. The
frame-rate figures (each session's fps, their mean, min and max, Jain's index, and the
fps in a cap's reasons) were re-recorded, and only they, when the delivered frame rate
came to leave out the frames still in flight at the end of a run
(``planner.sim.delivered``), and the wording of five sentences (a whole frame rate written
"21 fps" by ``planner.display``, and the measure-next basis naming the plan's batch sizes)
when those changed; every other figure is the one recorded then.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from .baseline_runs import (
    DATA,
    scenarios,
    summarise_recommendation,
    summarise_run,
    summarise_sweep,
)

RECORDED: dict[str, Any] = json.loads(DATA.read_text(encoding="utf-8"))


def differences(recorded: Any, now: Any, where: str = "") -> list[str]:
    """Where ``now`` differs from ``recorded`` (exactly; keys added since are ignored)."""
    if isinstance(recorded, dict):
        if not isinstance(now, dict):
            return [f"{where}: {now!r} is not a mapping"]
        out = []
        for key, value in recorded.items():
            if key not in now:
                out.append(f"{where}/{key}: missing")
            else:
                out.extend(differences(value, now[key], f"{where}/{key}"))
        return out
    if isinstance(recorded, list):
        if not isinstance(now, list) or len(now) != len(recorded):
            return [f"{where}: {now!r} vs recorded {recorded!r}"]
        return [d for i, (a, b) in enumerate(zip(recorded, now, strict=True))
                for d in differences(a, b, f"{where}[{i}]")]  # fmt: skip
    if recorded != now or type(recorded) is not type(now):
        return [f"{where}: {now!r} vs recorded {recorded!r}"]
    return []


def test_the_recorded_runs_cover_every_scenario() -> None:
    assert set(RECORDED["runs"]) == set(scenarios())


@pytest.mark.parametrize("name", sorted(scenarios()))
def test_a_run_with_default_stages_is_identical_to_the_recorded_one(name: str) -> None:
    now = json.loads(json.dumps(summarise_run(scenarios()[name])))
    assert differences(RECORDED["runs"][name], now) == []


def test_a_sweep_with_default_stages_is_identical_to_the_recorded_one() -> None:
    now = json.loads(json.dumps(summarise_sweep()))
    assert differences(RECORDED["sweep"], now) == []


def test_a_recommendation_with_default_stages_is_identical_to_the_recorded_one() -> None:
    now = json.loads(json.dumps(summarise_recommendation()))
    assert differences(RECORDED["recommendation"], now) == []
