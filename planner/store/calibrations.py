"""Where calibrations live: the ``calibrations`` table of the planner's DuckDB store.

A calibration (``planner.sim.calibration``) belongs to one curve and names the load test it
was fitted from. The table is created the first time one is stored, so a store without it
simply has no calibrations. Reading needs nothing from the load-test machinery, so plans
and the dashboard can look calibrations up cheaply.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import duckdb

from planner.errors import BadInput, NotFound
from planner.sim.calibration import Calibration
from planner.store.connection import timestamp
from planner.store.repository import Store

_CALIBRATION_COLUMNS = (
    "SELECT curve_id, a_ms, c_ms, d_ms, loadtest_id, created_at, batches, frames, sizes, note, "
    "spread_sigma FROM calibrations "
)
_NEWEST = " ORDER BY created_at DESC NULLS LAST, id"
_SELECT_CALIBRATIONS = {
    "all": _CALIBRATION_COLUMNS + _NEWEST,
    "curve": _CALIBRATION_COLUMNS + "WHERE curve_id = ?" + _NEWEST,
    "loadtest": _CALIBRATION_COLUMNS + "WHERE loadtest_id = ?" + _NEWEST,
    "id": _CALIBRATION_COLUMNS + "WHERE id = ?" + _NEWEST,
}
"""The calibration queries, one per filter (the values are always bound)."""


def insert_calibration(cur: duckdb.DuckDBPyConnection, c: Calibration) -> None:
    cur.execute(
        "INSERT INTO calibrations (id, curve_id, loadtest_id, created_at, a_ms, c_ms, d_ms, "
        "batches, frames, sizes, note, spread_sigma) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
        "ON CONFLICT (id) DO NOTHING",
        [c.id, c.curve_id, c.loadtest, c.created_at, c.a_ms, c.c_ms, c.d_ms, c.batches,
         c.frames, list(c.sizes), c.note, c.spread_sigma],
    )  # fmt: skip


def save_calibration(store: Store, calibration: Calibration) -> Calibration:
    """Store a calibration (the same one twice is stored once); returns it."""
    if calibration.created_at is None:
        calibration = replace(calibration, created_at=timestamp())
    with store.write() as cur:
        insert_calibration(cur, calibration)
    return calibration


def select_calibrations(
    cur: duckdb.DuckDBPyConnection, where: str, values: Sequence[Any]
) -> list[Calibration]:
    rows = cur.execute(_SELECT_CALIBRATIONS[where], list(values)).fetchall()
    return [
        Calibration(
            curve_id=r[0], a_ms=r[1], c_ms=r[2], d_ms=r[3], loadtest=r[4], created_at=r[5],
            batches=r[6], frames=r[7], sizes=tuple(r[8] or ()), note=r[9], spread_sigma=r[10],
        )
        for r in rows
    ]  # fmt: skip


def calibrations(store: Store, curve_id: str | None = None) -> list[Calibration]:
    """The stored calibrations (of one curve), newest first."""

    def read() -> list[Calibration]:
        with store.read() as cur:
            if curve_id is None:
                return select_calibrations(cur, "all", [])
            return select_calibrations(cur, "curve", [curve_id])

    return list(store.remembered(("calibrations", curve_id), read))


def calibration(store: Store, calibration_id: str) -> Calibration:
    """A stored calibration by id (NotFound)."""
    wanted = calibration_id.strip().lower()

    def read() -> list[Calibration]:
        with store.read() as cur:
            return select_calibrations(cur, "id", [wanted])

    found = store.remembered(("calibration", wanted), read)
    if not found:
        raise NotFound(f"no stored calibration has the id {calibration_id!r}")
    return found[0]


def latest_calibration(store: Store, curve_id: str) -> Calibration | None:
    """The newest calibration of a curve, or None."""
    found = calibrations(store, curve_id)
    return found[0] if found else None


def resolve(
    store: Store, choice: str | None, curve_id: str, *, default: str = "latest"
) -> Calibration | None:
    """The calibration a ``--calibration`` option names for a curve: ``latest`` (the
    curve's newest, or None when it has none), ``none``, or an id (NotFound when no such
    calibration is stored; BadInput when it belongs to another curve). ``choice`` None
    means ``default``."""
    text = (choice if choice is not None else default).strip().lower()
    if text == "none":
        return None
    if text == "latest":
        return latest_calibration(store, curve_id)
    found = calibration(store, text)
    if found.curve_id != curve_id:
        raise BadInput(
            f"calibration {found.id} belongs to the curve {found.curve_id}, not to {curve_id}"
        )
    return found
