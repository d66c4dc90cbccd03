"""The curve store: one DuckDB file holding cards, curves, points and saved plans.

A ``Store`` owns one root DuckDB connection and hands each operation its own cursor, so
many threads (the sessions of one Streamlit server) can read and write at once. Writes
are serialised by a lock and run in a transaction each: an import either stores every
curve it read or none. A second *process* cannot open the same file while this one has
it; that case becomes a ``StoreLocked`` error that names the holder.

Opening an empty file creates the schema and loads the built-in measurements once; a
``meta`` row remembers that, so deleting a built-in curve is not undone on the next open.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb

from planner.cards import Card, MigProfile, builtin_catalogue, card_from_dict, clean_price
from planner.curve import OPTIONAL_POINT_FIELDS, Curve, Point, clean_text
from planner.errors import BadInput, NotFound, StoreLocked
from planner.paths import default_store_path, measurements_dir

SCHEMA_VERSION = 2

_SCHEMA = [
    """CREATE TABLE IF NOT EXISTS schema_version (
        version INTEGER NOT NULL,
        applied_at TIMESTAMP NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS meta (key VARCHAR PRIMARY KEY, value VARCHAR NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS cards (
        name VARCHAR PRIMARY KEY,
        memory_gb DOUBLE,
        description VARCHAR NOT NULL DEFAULT '',
        mig BOOLEAN NOT NULL DEFAULT FALSE,
        mig_slices INTEGER,
        price_per_hour DOUBLE,
        builtin BOOLEAN NOT NULL DEFAULT FALSE
    )""",
    """CREATE TABLE IF NOT EXISTS mig_profiles (
        card VARCHAR NOT NULL,
        name VARCHAR NOT NULL,
        slices INTEGER NOT NULL,
        position INTEGER NOT NULL,
        memory_gb DOUBLE,
        max_instances INTEGER,
        PRIMARY KEY (card, name)
    )""",
    """CREATE TABLE IF NOT EXISTS curves (
        id VARCHAR PRIMARY KEY,
        model VARCHAR NOT NULL,
        card VARCHAR NOT NULL,
        precision VARCHAR,
        resolution VARCHAR,
        mig_profile VARCHAR,
        source VARCHAR NOT NULL,
        created_at TIMESTAMP NOT NULL,
        environment VARCHAR NOT NULL DEFAULT '{}'
    )""",
    """CREATE TABLE IF NOT EXISTS points (
        curve_id VARCHAR NOT NULL,
        batch INTEGER NOT NULL,
        latency_ms DOUBLE NOT NULL,
        p10_ms DOUBLE,
        p50_ms DOUBLE,
        p90_ms DOUBLE,
        p99_ms DOUBLE,
        std_ms DOUBLE,
        n INTEGER,
        memory_mb DOUBLE,
        PRIMARY KEY (curve_id, batch)
    )""",
    """CREATE TABLE IF NOT EXISTS plans (
        id VARCHAR PRIMARY KEY,
        params VARCHAR NOT NULL,
        created_at TIMESTAMP NOT NULL
    )""",
]

_POINT_COLUMNS = ("batch", "latency_ms", *OPTIONAL_POINT_FIELDS)
_SELECT_CURVES = (
    "SELECT id, model, card, precision, resolution, mig_profile, source, created_at, environment "
    "FROM curves"
)
_INSERT_CURVE = (
    "INSERT INTO curves (id, model, card, precision, resolution, mig_profile, source, "
    "created_at, environment) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_INSERT_POINT = (
    "INSERT INTO points (curve_id, batch, latency_ms, p10_ms, p50_ms, p90_ms, p99_ms, std_ms, "
    "n, memory_mb) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_SELECT_POINTS = (
    "SELECT curve_id, batch, latency_ms, p10_ms, p50_ms, p90_ms, p99_ms, std_ms, n, memory_mb "
    "FROM points WHERE list_contains(?, curve_id) ORDER BY curve_id, batch"
)
_LOCK_HOLDER = re.compile(r"PID (\d+)")


def _now() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None, microsecond=0)


class Store:
    """A DuckDB-backed store of cards, curves and plans. Safe to share between threads.

    ``Store()`` opens ``PLANNER_DB`` or the per-user default; ``Store(path)`` a given file.
    Use it as a context manager or call ``close()``.
    """

    def __init__(self, path: str | Path | None = None, *, load_builtins: bool = True) -> None:
        self.path = Path(path) if path is not None else default_store_path()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._root = duckdb.connect(
                str(self.path),
                config={
                    "autoinstall_known_extensions": False,
                    "autoload_known_extensions": False,
                },
            )
        except duckdb.IOException as exc:
            if "lock" in str(exc).lower():
                holder = _LOCK_HOLDER.search(str(exc))
                who = f"process {holder[1]}" if holder else "another process"
                raise StoreLocked(
                    f"the store {self.path} is in use by {who} (a running dashboard or "
                    "command); stop it, or point PLANNER_DB at another file"
                ) from None
            raise BadInput(f"cannot open the store {self.path}: {exc}") from None
        self._write_lock = threading.RLock()
        self._migrate()
        if load_builtins:
            self._load_builtins()

    # -- lifecycle ----------------------------------------------------------------------

    def close(self) -> None:
        self._root.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _read(self) -> Iterator[duckdb.DuckDBPyConnection]:
        cursor = self._root.cursor()
        try:
            yield cursor
        finally:
            cursor.close()

    @contextmanager
    def _write(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """A cursor inside a transaction that commits on success and rolls back on error."""
        with self._write_lock:
            cursor = self._root.cursor()
            try:
                cursor.execute("BEGIN TRANSACTION")
                try:
                    yield cursor
                except BaseException:
                    cursor.execute("ROLLBACK")
                    raise
                cursor.execute("COMMIT")
            finally:
                cursor.close()

    def _migrate(self) -> None:
        with self._write() as cur:
            for statement in _SCHEMA:
                cur.execute(statement)
            row = cur.execute("SELECT max(version) FROM schema_version").fetchone()
            current = row[0] if row else None
            if current is None:
                cur.execute("INSERT INTO schema_version VALUES (?, ?)", [SCHEMA_VERSION, _now()])
            elif current > SCHEMA_VERSION:
                raise BadInput(
                    f"the store {self.path} was written by a newer planner (schema "
                    f"{current}, this one knows {SCHEMA_VERSION}); upgrade the planner"
                )
            elif current < 2:
                self._add_mig_profile_memory(cur)
                cur.execute("INSERT INTO schema_version VALUES (?, ?)", [2, _now()])

    @staticmethod
    def _add_mig_profile_memory(cur: duckdb.DuckDBPyConnection) -> None:
        """Schema 2: each MIG profile's memory and most instances per card, filled in for
        the catalogue's cards."""
        cur.execute("ALTER TABLE mig_profiles ADD COLUMN IF NOT EXISTS memory_gb DOUBLE")
        cur.execute("ALTER TABLE mig_profiles ADD COLUMN IF NOT EXISTS max_instances INTEGER")
        for card in builtin_catalogue():
            for profile in card.mig_profiles:
                cur.execute(
                    "UPDATE mig_profiles SET memory_gb = ?, max_instances = ? "
                    "WHERE card = ? AND name = ?",
                    [profile.memory_gb, profile.max_instances, card.name, profile.name],
                )

    def _load_builtins(self) -> None:
        """Load the card catalogue and the built-in curves, once per store file."""
        from planner.imports import ImportOptions, read_files

        with self._read() as cur:
            done = cur.execute("SELECT value FROM meta WHERE key = 'builtins_loaded'").fetchone()
        if done:
            return
        files = sorted((measurements_dir() / "curves").glob("*.json"))
        result = read_files(
            [(f.name, f.read_bytes()) for f in files], ImportOptions(source="built-in")
        )
        with self._write() as cur:
            again = cur.execute("SELECT value FROM meta WHERE key = 'builtins_loaded'").fetchone()
            if again:
                return
            for card in builtin_catalogue():
                self._insert_card(cur, card)
            for curve in result.curves:
                self._insert_curve(cur, curve)
            cur.execute("INSERT INTO meta VALUES ('builtins_loaded', ?)", [_now().isoformat()])

    # -- cards --------------------------------------------------------------------------

    def cards(self) -> list[Card]:
        """Every card, catalogue first, then by name."""
        with self._read() as cur:
            rows = cur.execute(
                "SELECT name, memory_gb, description, mig, mig_slices, price_per_hour, builtin "
                "FROM cards ORDER BY builtin DESC, name"
            ).fetchall()
            profiles = cur.execute(
                "SELECT card, name, slices, memory_gb, max_instances FROM mig_profiles "
                "ORDER BY card, position"
            ).fetchall()
        by_card: dict[str, list[MigProfile]] = {}
        for card, name, slices, memory, instances in profiles:
            by_card.setdefault(card, []).append(MigProfile(name, slices, memory, instances))
        return [
            Card(
                name=name,
                memory_gb=memory,
                description=description,
                mig=mig,
                mig_slices=slices,
                mig_profiles=tuple(by_card.get(name, ())),
                price_per_hour=price,
                builtin=builtin,
            )
            for name, memory, description, mig, slices, price, builtin in rows
        ]

    def card(self, name: str) -> Card:
        """The card called ``name`` (case-insensitive), or NotFound."""
        wanted = name.strip().lower()
        for card in self.cards():
            if card.name.lower() == wanted:
                return card
        raise NotFound(f"no card called {name!r}; `planner cards list` shows the cards")

    def set_price(self, name: str, usd_per_hour: object) -> Card:
        """Set a card's hourly price in USD (the only way prices enter the planner)."""
        price = clean_price(usd_per_hour)
        card = self.card(name)
        with self._write() as cur:
            cur.execute("UPDATE cards SET price_per_hour = ? WHERE name = ?", [price, card.name])
        return self.card(card.name)

    def _insert_card(self, cur: duckdb.DuckDBPyConnection, card: Card) -> None:
        cur.execute(
            "INSERT INTO cards (name, memory_gb, description, mig, mig_slices, price_per_hour, "
            "builtin) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
            [
                card.name,
                card.memory_gb,
                card.description,
                card.mig,
                card.mig_slices,
                card.price_per_hour,
                card.builtin,
            ],
        )
        for position, profile in enumerate(card.mig_profiles):
            cur.execute(
                "INSERT INTO mig_profiles (card, name, slices, position, memory_gb, max_instances) "
                "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                [
                    card.name,
                    profile.name,
                    profile.slices,
                    position,
                    profile.memory_gb,
                    profile.max_instances,
                ],
            )

    def _card_name(self, cur: duckdb.DuckDBPyConnection, name: str) -> str:
        """The stored spelling of a card, adding an unknown card to the catalogue."""
        row = cur.execute("SELECT name FROM cards WHERE lower(name) = lower(?)", [name]).fetchone()
        if row:
            return str(row[0])
        self._insert_card(cur, card_from_dict({"name": name, "description": "added by an import"}))
        return name

    # -- curves -------------------------------------------------------------------------

    def add_curves(self, curves: Sequence[Curve]) -> list[Curve]:
        """Store curves atomically; a curve already stored (same id) is left as it is.

        Returns the stored curves (with creation times), in the order given.
        """
        ids = []
        with self._write() as cur:
            for curve in curves:
                ids.append(self._insert_curve(cur, curve))
        return [self.curve(i) for i in ids]

    def _insert_curve(self, cur: duckdb.DuckDBPyConnection, curve: Curve) -> str:
        card = self._card_name(cur, curve.card)
        if card != curve.card:
            curve = replace(curve, card=card)
        curve_id = curve.id
        exists = cur.execute("SELECT 1 FROM curves WHERE id = ?", [curve_id]).fetchone()
        if exists:
            return curve_id
        cur.execute(
            _INSERT_CURVE,
            [
                curve_id,
                curve.model,
                curve.card,
                curve.precision,
                curve.resolution,
                curve.mig_profile,
                curve.source,
                curve.created_at.replace(tzinfo=None) if curve.created_at else _now(),
                json.dumps(dict(curve.environment), sort_keys=True, default=str),
            ],
        )
        cur.executemany(
            _INSERT_POINT,
            [[curve_id, *(getattr(p, c) for c in _POINT_COLUMNS)] for p in curve.points],
        )
        return curve_id

    def curves(
        self,
        *,
        model: str | None = None,
        card: str | None = None,
        precision: str | None = None,
    ) -> list[Curve]:
        """Stored curves, optionally filtered, ordered by model, card, resolution, precision."""
        with self._read() as cur:
            rows = cur.execute(
                _SELECT_CURVES + " WHERE ($model IS NULL OR lower(model) = lower($model))"
                " AND ($card IS NULL OR lower(card) = lower($card))"
                " AND ($precision IS NULL OR lower(precision) = lower($precision))"
                " ORDER BY model, card, mig_profile NULLS FIRST, resolution DESC, precision,"
                " created_at, id",
                {"model": model or None, "card": card or None, "precision": precision or None},
            ).fetchall()
            ids = [r[0] for r in rows]
            points = self._points(cur, ids)
        return [self._curve_from_row(row, points.get(row[0], ())) for row in rows]

    def curve(self, curve_id: str) -> Curve:
        """The curve with this id, or NotFound."""
        text = clean_text(curve_id, "curve id") or ""
        with self._read() as cur:
            row = cur.execute(_SELECT_CURVES + " WHERE id = ?", [text]).fetchone()
            if row is None:
                raise NotFound(f"no curve with id {text!r}; `planner curves list` shows the ids")
            points = self._points(cur, [text])
        return self._curve_from_row(row, points.get(text, ()))

    def _points(
        self, cur: duckdb.DuckDBPyConnection, ids: Iterable[str]
    ) -> dict[str, tuple[Point, ...]]:
        wanted = list(ids)
        if not wanted:
            return {}
        rows = cur.execute(_SELECT_POINTS, [wanted]).fetchall()
        out: dict[str, list[Point]] = {}
        for curve_id, *values in rows:
            out.setdefault(curve_id, []).append(
                Point(**dict(zip(_POINT_COLUMNS, values, strict=True)))
            )
        return {k: tuple(v) for k, v in out.items()}

    @staticmethod
    def _curve_from_row(row: Sequence[Any], points: tuple[Point, ...]) -> Curve:
        _id, model, card, precision, resolution, mig, source, created, environment = row
        return Curve(
            model=model,
            card=card,
            precision=precision,
            resolution=resolution,
            points=points,
            mig_profile=mig,
            source=source,
            created_at=created.replace(tzinfo=UTC) if created else None,
            environment=json.loads(environment or "{}"),
        )

    def plans_using(self, curve_id: str) -> list[str]:
        """Ids of saved plans whose parameters name this curve."""
        with self._read() as cur:
            rows = cur.execute(
                "SELECT id FROM plans WHERE json_extract_string(params, '$.curve') = ? ORDER BY id",
                [curve_id],
            ).fetchall()
        return [r[0] for r in rows]

    def delete_curve(self, curve_id: str, *, force: bool = False) -> Curve:
        """Delete a curve and its points. A curve that saved plans use needs ``force``."""
        curve = self.curve(curve_id)
        users = self.plans_using(curve.id)
        if users and not force:
            raise BadInput(
                f"curve {curve.id} is used by {len(users)} saved plan(s) "
                f"({', '.join(users[:5])}); confirm to delete it anyway"
            )
        with self._write() as cur:
            cur.execute("DELETE FROM points WHERE curve_id = ?", [curve.id])
            cur.execute("DELETE FROM curves WHERE id = ?", [curve.id])
        return curve

    # -- plans --------------------------------------------------------------------------

    def save_plan(self, params: Mapping[str, Any]) -> str:
        """Store plan parameters under a short id derived from them (saving twice is one plan)."""
        text = json.dumps(dict(params), sort_keys=True, separators=(",", ":"))
        plan_id = hashlib.sha256(text.encode("utf-8")).hexdigest()[:10]
        with self._write() as cur:
            cur.execute(
                "INSERT INTO plans VALUES (?, ?, ?) ON CONFLICT DO NOTHING", [plan_id, text, _now()]
            )
        return plan_id

    def plan(self, plan_id: str) -> dict[str, Any]:
        """The parameters saved under ``plan_id``, or NotFound."""
        with self._read() as cur:
            row = cur.execute("SELECT params FROM plans WHERE id = ?", [plan_id]).fetchone()
        if row is None:
            raise NotFound(f"no saved plan with id {plan_id!r}")
        loaded: dict[str, Any] = json.loads(row[0])
        return loaded
