"""Where load tests live, in the planner's DuckDB store.

A load test (measured here by ``planner loadtest``, or imported from another worker) is
stored with its options, what it ran on, and per run its scenario, the measured and the
predicted figures and, when there are any, the worker's per-frame records; the curve it
was predicted on is named by id. The calibration fitted from a load test is stored in the
same transaction, through ``planner.store.calibrations``, where calibrations live.

The tables are part of the store's schema (``planner.store.schema``). Each save is one
transaction: a load test is stored whole or not at all.
Every value goes into SQL as a bound parameter.
"""

from __future__ import annotations

import json
from dataclasses import asdict, replace
from typing import Any

import duckdb
import numpy as np

from planner.errors import BadInput, NotFound
from planner.sim.cascade import CascadeModel
from planner.sim.crops import Crops
from planner.sim.scenario import Scenario, Sharing
from planner.sim.stages import STAGE_FIELDS, WorkerStages
from planner.store.calibrations import insert_calibration, select_calibrations
from planner.store.connection import timestamp
from planner.store.repository import Store
from planner.validate.measured_vs_predicted import Summary
from planner.validate.options import LoadTestOptions
from planner.validate.runs import Cap, LoadTest, Run
from planner.validate.worker.frames import COLUMNS, TIME_COLUMNS, from_columns

# One statement for all of a run's frames: each column goes in as one list (in the order
# of ``COLUMNS``; a test checks the two agree).
_INSERT_FRAMES = (
    "INSERT INTO loadtest_frames (loadtest_id, position, session, frame, capture_ms, "
    "arrival_ms, arrived_ms, pre_start_ms, pre_end_ms, ready_ms, batch, batch_size, "
    "batch_start_ms, batch_end_ms, post_start_ms, post_end_ms, status) SELECT $1, $2, "
    "unnest($3::INTEGER[]), unnest($4::INTEGER[]), unnest($5::DOUBLE[]), "
    "unnest($6::DOUBLE[]), unnest($7::DOUBLE[]), unnest($8::DOUBLE[]), unnest($9::DOUBLE[]), "
    "unnest($10::DOUBLE[]), unnest($11::INTEGER[]), unnest($12::INTEGER[]), "
    "unnest($13::DOUBLE[]), unnest($14::DOUBLE[]), unnest($15::DOUBLE[]), "
    "unnest($16::DOUBLE[]), unnest($17::VARCHAR[])"
)


_SELECT_FRAMES = (
    "SELECT position, session, frame, capture_ms, arrival_ms, arrived_ms, pre_start_ms, "
    "pre_end_ms, ready_ms, batch, batch_size, batch_start_ms, batch_end_ms, post_start_ms, "
    "post_end_ms, status FROM loadtest_frames WHERE loadtest_id = ? "
    "ORDER BY position, session, frame"
)


# ---------------------------------------------------------------------------------------
# Scenarios and options as JSON


def scenario_dict(scenario: Scenario) -> dict[str, Any]:
    """A scenario as plain JSON values (``scenario_from_dict`` reads it back equal). The
    worker's stages are stored as four flat values in the stages' place, as they were
    before they became one value, so stored load tests read the same either way; the
    sharing as its mode and its settings by name (``Sharing.as_dict``)."""
    values: dict[str, Any] = {}
    for name, value in json.loads(json.dumps(asdict(scenario))).items():
        if name == "cascade" and not value:
            continue  # one model per frame: as every stored scenario before cascades
        values.update(value if name == "stages" else {name: value})
    values["sharing"] = json.loads(json.dumps(scenario.sharing.as_dict()))
    return values


def scenario_from_dict(values: dict[str, Any]) -> Scenario:
    """The scenario ``scenario_dict`` wrote (validated again); BadInput if it is not one."""
    try:
        sharing = dict(values.get("sharing") or {})
        for name in ("cotenants", "cotenant_memory_mb"):
            sharing[name] = tuple(sharing.get(name) or ())
        fields = {k: v for k, v in values.items() if k not in STAGE_FIELDS}
        fields["stages"] = WorkerStages(**{k: v for k, v in values.items() if k in STAGE_FIELDS})
        fields["sharing"] = Sharing.of(**sharing)
        fields["latency_ms"] = tuple(fields["latency_ms"])
        fields["fps"] = tuple(fields["fps"])
        if "cascade" in fields:
            fields["cascade"] = tuple(_cascade_model(m) for m in fields["cascade"])
        return Scenario(**fields)
    except (TypeError, KeyError) as exc:
        raise BadInput(f"not a stored scenario ({exc})") from None


def _cascade_model(values: dict[str, Any]) -> CascadeModel:
    crops = dict(values.get("crops") or {})
    crops["shares"] = tuple(tuple(pair) for pair in crops.get("shares") or ())
    return CascadeModel(
        latency_ms=tuple(values["latency_ms"]),
        crops=Crops(**crops),
        name=values.get("name", ""),
    )


# ---------------------------------------------------------------------------------------
# Load tests


def save_loadtest(store: Store, test: LoadTest) -> LoadTest:
    """Store a load test whole (runs, records, and the calibration fitted from it, which
    then names this load test) in one transaction; returns it with its id."""
    with store.write() as cur:
        row = cur.execute("SELECT coalesce(max(id), 0) + 1 FROM loadtests").fetchone()
        number = int(row[0]) if row else 1
        created = test.created_at or timestamp()
        cur.execute(
            "INSERT INTO loadtests VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                number, created, test.source, test.curve.id, test.description,
                json.dumps(test.options.as_dict(), sort_keys=True),
                json.dumps(test.environment, sort_keys=True, default=str),
                test.pre_ms, test.post_ms, test.interrupted,
                json.dumps([c.as_dict() for c in test.caps]),
                None if test.applied is None else test.applied.id,
            ],
        )  # fmt: skip
        for position, run in enumerate(test.runs):
            _insert_run(cur, number, position, run)
        calibration = test.calibration
        if calibration is not None:
            calibration = replace(calibration, loadtest=number)
            insert_calibration(cur, calibration)
    return replace(test, id=number, calibration=calibration, created_at=created)


def _insert_run(cur: duckdb.DuckDBPyConnection, number: int, position: int, run: Run) -> None:
    cur.execute(
        "INSERT INTO loadtest_runs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            number, position, run.sessions, run.policy, run.scenario.seed,
            json.dumps(scenario_dict(run.scenario)),
            json.dumps(run.measured.as_dict()),
            json.dumps({k: list(v) for k, v in run.ranges}),
            json.dumps(run.predicted.as_dict()),
            None if run.calibrated is None else json.dumps(run.calibrated.as_dict()),
        ],
    )  # fmt: skip
    if run.records is None or run.records.frames == 0:
        return
    columns = run.records.columns()
    values: list[Any] = [number, position]
    for name in COLUMNS:
        column = columns[name]
        if name in TIME_COLUMNS:
            values.append([None if np.isnan(v) else float(v) for v in column.tolist()])
        elif name == "status":
            values.append([str(v) for v in column.tolist()])
        else:
            values.append([int(v) for v in column.tolist()])
    cur.execute(_INSERT_FRAMES, values)


def loadtests(store: Store) -> list[dict[str, Any]]:
    """The stored load tests, newest first: id, date, source, curve, description, runs."""
    with store.read() as cur:
        rows = cur.execute(
            "SELECT l.id, l.created_at, l.source, l.curve_id, l.description, l.interrupted, "
            "count(r.position) FROM loadtests l LEFT JOIN loadtest_runs r ON r.loadtest_id = "
            "l.id GROUP BY ALL ORDER BY l.id DESC"
        ).fetchall()
    return [
        {"id": r[0], "created_at": r[1], "source": r[2], "curve_id": r[3], "description": r[4],
         "interrupted": r[5], "runs": r[6]}
        for r in rows
    ]  # fmt: skip


def load_loadtest(store: Store, number: int, *, records: bool = False) -> LoadTest:
    """A stored load test (NotFound); with ``records``, each run's per-frame records too."""
    with store.read() as cur:
        head = cur.execute(
            "SELECT created_at, source, curve_id, description, options, environment, pre_ms, "
            "post_ms, interrupted, caps, applied_calibration FROM loadtests WHERE id = ?",
            [number],
        ).fetchone()
        if head is None:
            raise NotFound(f"no stored load test has the id {number}")
        rows = cur.execute(
            "SELECT position, scenario, measured, ranges, predicted, calibrated FROM "
            "loadtest_runs WHERE loadtest_id = ? ORDER BY position",
            [number],
        ).fetchall()
        frames = _frames(cur, number) if records else {}
        found = select_calibrations(cur, "loadtest", [number])
        applied = select_calibrations(cur, "id", [head[10]]) if head[10] else []
    created, source, curve_id, description, options, env, pre, post, stopped, caps, _ = head
    curve = store.curve(curve_id)
    runs = []
    for position, scenario_json, measured, ranges, predicted, calibrated in rows:
        scenario = scenario_from_dict(json.loads(scenario_json))
        worker = None
        if position in frames:
            worker = from_columns(scenario, frames[position])
        runs.append(
            Run(
                scenario=scenario,
                measured=Summary.from_dict(json.loads(measured)),
                predicted=Summary.from_dict(json.loads(predicted)),
                records=worker,
                calibrated=None
                if calibrated is None
                else Summary.from_dict(json.loads(calibrated)),
                ranges=tuple(
                    (k, (float(v[0]), float(v[1]))) for k, v in json.loads(ranges).items()
                ),
            )
        )
    return LoadTest(
        curve=curve,
        options=LoadTestOptions.from_dict(json.loads(options)),
        runs=tuple(runs),
        pre_ms=pre,
        post_ms=post,
        environment=json.loads(env),
        calibration=found[0] if found else None,
        applied=applied[0] if applied else None,
        caps=tuple(Cap.from_dict(c) for c in json.loads(caps)),
        interrupted=stopped,
        id=number,
        source=source,
        description=description,
        created_at=created,
    )


def _frames(cur: duckdb.DuckDBPyConnection, number: int) -> dict[int, dict[str, list[Any]]]:
    rows = cur.execute(_SELECT_FRAMES, [number]).fetchall()
    out: dict[int, dict[str, list[Any]]] = {}
    for row in rows:
        columns = out.setdefault(int(row[0]), {name: [] for name in COLUMNS})
        for name, value in zip(COLUMNS, row[1:], strict=True):
            columns[name].append(np.nan if value is None and name in TIME_COLUMNS else value)
    return out
