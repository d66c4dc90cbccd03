"""Reading a reference worker's bundle back (``planner.validate.worker.bundle``): its
manifest checked value by value before anything is sized from it, its runs summarised and
predicted here on the bundle's curve, and a calibration fitted from them."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from planner import limits
from planner.curves.curve import Curve
from planner.curves.fit import fit_curve
from planner.curves.imports import read_files
from planner.curves.imports.base import ImportOptions, Problems
from planner.errors import BadInput
from planner.sim.policies import POLICIES
from planner.sim.simulate import simulate_charged
from planner.sim.work import Work
from planner.validate.loadtest import calibrate
from planner.validate.measured_vs_predicted import Summary
from planner.validate.options import LoadTestOptions
from planner.validate.runs import LoadTest, Run
from planner.validate.worker.bundle import MANIFEST, read_frames_file, read_manifest
from planner.validate.worker.checks import problems as record_problems
from planner.validate.worker.frames import from_columns


def bundle_curve(manifest: dict[str, Any]) -> Curve:
    """The curve a bundle was measured with (the planner's JSON import format)."""
    document = json.dumps(manifest.get("curve"))
    return read_files([("curve.json", document.encode())], ImportOptions(source="measured")).curves[
        0
    ]


@dataclass(frozen=True)
class _Entry:
    """One run a bundle's manifest lists, its values checked."""

    run: int
    sessions: int
    policy: str
    seed: int


@dataclass(frozen=True)
class _Manifest:
    """What import reads from a bundle's ``loadtest.json``, each value checked."""

    options: LoadTestOptions
    pre_ms: float
    post_ms: float
    environment: dict[str, Any]
    entries: tuple[_Entry, ...]


MANIFEST_FIELDS = ("curve", "options", "pre_ms", "post_ms", "environment", "runs")
"""What a bundle's manifest holds beside its format (``write_bundle`` writes them all)."""
_ENVIRONMENT_LISTS = ("load_average_start", "load_average_end")
"""Environment values the reports format as numbers: lists of the 1, 5 and 15 minute
load averages."""


def shown(value: Any) -> str:
    """``repr(value)`` for a message, cut short: a long value needs no full echo."""
    text = repr(value)
    return text if len(text) <= 30 else text[:29] + "…"


def _whole(value: Any, bound: limits.Bound) -> int | None:
    """``value`` as a whole number inside ``bound`` (a float only where it holds one
    exactly), else None; a bool is not a number."""
    if not bound.holds(value) or (isinstance(value, float) and abs(value) >= 2**53):
        return None
    return int(value)


def check_manifest(manifest: dict[str, Any]) -> _Manifest:
    """The values import reads from a bundle's manifest, each checked against its range
    in ``planner.limits`` before anything is sized from it. BadInput lists every problem
    (the first ``MAX_PROBLEMS_PER_FILE`` word for word, the rest counted)."""
    found = Problems(MANIFEST)
    missing = [k for k in MANIFEST_FIELDS if k not in manifest]
    if missing:
        found.append(
            f"{MANIFEST}: {', '.join(missing)} {'is' if len(missing) == 1 else 'are'} missing "
            f"(a bundle's manifest has {', '.join(MANIFEST_FIELDS)})"
        )
    options = None
    given = manifest.get("options")
    if "options" in manifest and not isinstance(given, dict):
        found.append(f"{MANIFEST}: options must be an object, not {shown(given)}")
    elif isinstance(given, dict):
        try:
            options = LoadTestOptions.from_dict(given)
        except BadInput as exc:
            found.extend(f"{MANIFEST}: options: {p}" for p in exc.problems)
    stages: dict[str, float] = {}
    for name in ("pre_ms", "post_ms"):
        value = manifest.get(name, 0.0)
        if not limits.STAGE_MS.holds(value):
            found.append(f"{MANIFEST}: {name} {shown(value)} must be {limits.STAGE_MS.words()} ms")
            value = 0.0
        stages[name] = float(value)
    environment = manifest.get("environment")
    if "environment" in manifest:
        found.extend(_environment_problems(environment))
    entries = _entries(manifest.get("runs"), found) if "runs" in manifest else ()
    found.check()
    assert options is not None and isinstance(environment, dict)  # else a problem was found
    return _Manifest(options, stages["pre_ms"], stages["post_ms"], dict(environment), entries)


def _environment_problems(environment: Any) -> list[str]:
    if not isinstance(environment, dict):
        return [f"{MANIFEST}: environment must be an object, not {shown(environment)}"]
    out = []
    machine = environment.get("machine")
    if machine is not None and not isinstance(machine, dict):
        out.append(f"{MANIFEST}: environment.machine must be an object, not {shown(machine)}")
    for name in _ENVIRONMENT_LISTS:
        values = environment.get(name)
        if values is None:
            continue
        if not (isinstance(values, list) and 1 <= len(values) <= 3
                and all(limits.LOAD_AVERAGE.holds(v) for v in values)):  # fmt: skip
            out.append(
                f"{MANIFEST}: environment.{name} must be a list of one to three load "
                f"averages, each {limits.LOAD_AVERAGE.words()}, not {shown(values)}"
            )
    return out


def _entries(runs: Any, found: Problems) -> tuple[_Entry, ...]:
    """The runs a manifest lists, each checked; a problem for each bad value, and for a
    run number listed twice."""
    if not isinstance(runs, list) or not runs:
        found.append(f"{MANIFEST}: runs must be a list of at least one run, not {shown(runs)}")
        return ()
    entries: list[_Entry] = []
    first: dict[int, int] = {}  # run number -> the index that listed it first
    for i, entry in enumerate(runs):
        where = f"{MANIFEST}: runs[{i}]"
        if not isinstance(entry, dict):
            found.append(f"{where} must be an object, not {shown(entry)}")
            continue
        values: dict[str, Any] = {}
        for name, bound in (("run", limits.LOADTEST_RUN), ("sessions", limits.SESSIONS),
                            ("seed", limits.SEED)):  # fmt: skip
            if name not in entry:
                found.append(f"{where} has no {name}")
                continue
            values[name] = _whole(entry[name], bound)
            if values[name] is None:
                found.append(f"{where}.{name} {shown(entry[name])} must be {bound.words()}")
        policy = entry.get("policy")
        if "policy" not in entry:
            found.append(f"{where} has no policy")
        elif not isinstance(policy, str) or policy not in POLICIES:
            found.append(f"{where}.policy {shown(policy)} must be one of {', '.join(POLICIES)}")
        number = values.get("run")
        if number is not None:
            if number in first:
                found.append(f"{where}.run {number} repeats runs[{first[number]}].run; each run "
                             "is listed once")  # fmt: skip
                continue
            first[number] = i
        if all(values.get(k) is not None for k in ("run", "sessions", "seed")) and (
            isinstance(policy, str) and policy in POLICIES
        ):
            entries.append(_Entry(values["run"], values["sessions"], policy, values["seed"]))
    return tuple(entries)


def import_bundle(
    path: Path, *, seeds_note: str = "", work: Work | None = None, name: str | None = None
) -> LoadTest:
    """A load test from a reference worker's bundle: its runs summarised and predicted
    here on the bundle's curve, a calibration fitted from them. BadInput when the bundle
    is unreadable, a value of its manifest is missing or out of range (``check_manifest``,
    before anything is sized from one), or its records are inconsistent; each problem is
    named, the first ``MAX_PROBLEMS_PER_FILE`` word for word and the rest counted.
    ``work`` (a page's budget) is charged for each run's prediction; ``name`` is the
    bundle's name in messages (the folder's own by default)."""
    name = name or path.name
    raw = read_manifest(path)
    manifest = check_manifest(raw)
    curve = bundle_curve(raw)
    frames = read_frames_file(path)
    options, pre, post = manifest.options, manifest.pre_ms, manifest.post_ms
    fitted = fit_curve(curve.points)
    largest = max(e.sessions for e in manifest.entries)
    table = tuple(float(v) for v in fitted.table(max(64, largest)))
    runs: list[Run] = []
    problems = Problems(name)
    for entry in manifest.entries:
        number = entry.run
        if number not in frames:
            problems.append(f"run {number}: no frames in the bundle")
            continue
        try:
            scenario = options.scenario(table, entry.sessions, entry.policy, entry.seed, pre,
                                        post)  # fmt: skip
            worker = from_columns(scenario, frames[number])
        except BadInput as exc:
            problems.extend(f"run {number}: {p}" for p in exc.problems)
            continue
        found = record_problems(worker)
        if found:
            problems.extend(f"run {number}: {p}" for p in found)
            continue
        predicted = simulate_charged(scenario, work)
        runs.append(
            Run(
                scenario=scenario,
                measured=Summary.of(worker.results(), worker.lateness_ms),
                predicted=Summary.of(predicted),
                records=worker,
                predicted_results=predicted,
            )
        )
    problems.check()
    return LoadTest(
        curve=curve,
        options=options,
        runs=tuple(runs),
        pre_ms=pre,
        post_ms=post,
        environment=manifest.environment,
        calibration=calibrate(runs, curve.id) if runs else None,
        source="imported bundle",
        description=f"reference worker bundle {name}{seeds_note}",
    )
