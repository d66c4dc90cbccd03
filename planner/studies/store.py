"""Where studies live: their definitions, their cells and each cell's result, in the
planner's DuckDB store.

Cells are keyed by ``planner.studies.study.cell_key`` (a hash of the plan, the planner's version
and the calibration), so a cell computed for one study serves every other study that
contains it. Only the process that runs a study writes here (the driver, never a pool
or Ray worker), in short transactions as cells finish, so the dashboard and other
commands keep using the store meanwhile. The tables are created the first time a study
is stored; a store without them simply has no studies.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from planner import __version__
from planner.errors import NotFound
from planner.links.urls import saved_params
from planner.store.connection import timestamp
from planner.store.repository import Store
from planner.studies.study import Cell, Study, study_from_dict


@dataclass(frozen=True)
class CellResult:
    """One cell's stored result: ``status`` is ``ok`` or ``error``."""

    key: str
    status: str
    outputs: dict[str, Any]
    error: str | None
    attempts: int
    elapsed_s: float


@dataclass(frozen=True)
class Member:
    """A cell as a member of a study: where it sits on the axes, and its result if any."""

    key: str
    curve_id: str
    coordinates: dict[str, Any]
    params: dict[str, str]
    result: CellResult | None


def save_study(store: Store, study: Study, cells: Sequence[Cell]) -> None:
    """Store (or update) a study's definition and its members, in one short transaction
    (the members' text is made before the file is taken)."""
    keys = [c.key for c in cells]
    coordinates = [json.dumps({k: _plain(v) for k, v in c.coordinates}, sort_keys=True)
                   for c in cells]  # fmt: skip
    params = [json.dumps(saved_params(c.params), sort_keys=True) for c in cells]
    with store.write() as cur:
        now = timestamp()
        cur.execute(
            "INSERT INTO studies VALUES (?, ?, ?, ?) ON CONFLICT (name) DO UPDATE SET "
            "spec = excluded.spec, updated_at = excluded.updated_at",
            [study.name, json.dumps(study.as_dict(), sort_keys=True), now, now],
        )
        cur.execute("DELETE FROM study_members WHERE study = ?", [study.name])
        if cells:
            # One statement of lists, not a statement per member: 4,000 members took 2.7 s
            # that way, holding the file, and a study may have 100,000.
            cur.execute(
                "INSERT INTO study_members SELECT $1, unnest($2::VARCHAR[]), "
                "unnest($3::INTEGER[]), unnest($4::VARCHAR[]), unnest($5::VARCHAR[]), "
                "unnest($6::VARCHAR[])",
                [study.name, keys, list(range(len(cells))), [c.curve_id for c in cells],
                 coordinates, params],
            )  # fmt: skip


def _plain(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def finished_keys(store: Store, keys: Iterable[str]) -> set[str]:
    """Which of ``keys`` have a successful result stored."""
    wanted = list(keys)
    if not wanted:
        return set()
    with store.read() as cur:
        rows = cur.execute(
            "SELECT key FROM study_cells WHERE status = 'ok' "
            "AND key IN (SELECT unnest($1::VARCHAR[]))",
            [wanted],
        ).fetchall()
    return {r[0] for r in rows}


def save_results(store: Store, results: Sequence[CellResult]) -> None:
    """Store finished cells, in one short transaction."""
    if not results:
        return
    now = timestamp()
    rows = [
        (r.key, r.status, r.error, r.attempts, json.dumps(r.outputs, sort_keys=True),
         r.outputs.get("seats_per_card"), r.outputs.get("cost_per_seat_hour"),
         r.outputs.get("latency_ms"), r.elapsed_s, now, __version__,
         r.outputs.get("calibration") or "none")
        for r in results
    ]  # fmt: skip
    with store.write() as cur:
        cur.executemany(
            "INSERT INTO study_cells VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (key) DO UPDATE SET status = excluded.status, error = excluded.error, "
            "attempts = excluded.attempts, outputs = excluded.outputs, "
            "seats_per_card = excluded.seats_per_card, "
            "cost_per_seat_hour = excluded.cost_per_seat_hour, "
            "latency_ms = excluded.latency_ms, elapsed_s = excluded.elapsed_s, "
            "finished_at = excluded.finished_at",
            rows,
        )


def studies(store: Store) -> list[str]:
    """The stored studies' names, newest first."""
    with store.read() as cur:
        rows = cur.execute("SELECT name FROM studies ORDER BY updated_at DESC, name").fetchall()
    return [r[0] for r in rows]


def load_study(store: Store, name: str) -> tuple[Study, list[Member]]:
    """A stored study's definition and its members with their results (NotFound)."""
    with store.read() as cur:
        row = cur.execute("SELECT spec FROM studies WHERE name = ?", [name]).fetchone()
        if row is None:
            raise NotFound(f"no stored study is called {name!r}")
        members = cur.execute(
            "SELECT m.key, m.curve_id, m.coordinates, m.params, c.status, c.outputs, c.error, "
            "c.attempts, c.elapsed_s FROM study_members m LEFT JOIN study_cells c "
            "ON c.key = m.key WHERE m.study = ? ORDER BY m.position",
            [name],
        ).fetchall()
    study = study_from_dict(json.loads(row[0]))
    out = []
    for key, curve_id, coords, params, status, outputs, error, attempts, elapsed in members:
        result = None
        if status is not None:
            result = CellResult(key, status, json.loads(outputs or "{}"), error, attempts, elapsed)
        out.append(Member(key, curve_id, json.loads(coords), json.loads(params), result))
    return study, out
