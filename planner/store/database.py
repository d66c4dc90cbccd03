"""The curve store: one DuckDB file holding cards, curves, points and saved plans.

The file is shared by every process on the machine that uses it: the dashboard server and
any number of ``planner`` commands. DuckDB lets only one process have a file open at a
time, so a ``Store`` holds no connection between operations: each operation (or a short
``batch()`` of them) connects, does its work in one transaction and closes the file
again. A process that finds the file held by another one waits and retries with a short
backoff, up to ``wait_s`` seconds (``PLANNER_DB_WAIT_S``, default 10), and only then gives
up with a one-line ``StoreLocked`` message naming the holder.

Within one process, every ``Store`` of the same file shares one lock, so the sessions of a
Streamlit server (threads) take turns; a connection is never used by two threads. Writes
run in a transaction each: an import either stores every curve it read or none. A file
the user may only read is opened read-only: listing and planning work, writing says why
it cannot. A damaged file, a folder that cannot be created or a full disk become a
one-line ``StoreError``; nothing stored before is lost.

Opening an empty file creates the schema and loads the built-in measurements once; a
``meta`` row remembers that, so deleting a built-in curve is not undone on the next open.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import random
import re
import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb

from planner.curves.cards import Card, MigProfile, builtin_catalogue, card_from_dict, clean_price
from planner.curves.curve import MAX_TEXT, OPTIONAL_POINT_FIELDS, Curve, Point, clean_text
from planner.demand.profiles import SHAPES, DemandProfile, clean_profile_name
from planner.errors import BadInput, NotFound, StoreError, StoreLocked
from planner.paths import default_store_path, measurements_dir

SCHEMA_VERSION = 4
"""Schema versions: 2 added MIG profiles' memory and instance counts; 3 curve flags,
renames and the names of saved plans; 4 demand profiles."""


@dataclass(frozen=True)
class SavedPlan:
    """A saved plan: its short id, the name it was saved under (if any), when, the
    headline it had then, and its parameters as stored (link parameter texts)."""

    id: str
    name: str | None
    created_at: datetime
    headline: str | None
    params: Mapping[str, Any]


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
        environment VARCHAR NOT NULL DEFAULT '{}',
        flag VARCHAR,
        renamed_from VARCHAR
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
        created_at TIMESTAMP NOT NULL,
        name VARCHAR,
        headline VARCHAR
    )""",
]

# Schema 4: demand profiles by name (``planner.demand.profiles``). Created by the migration step as
# well as for a new file, so it does not matter which version a file comes from.
_DEMAND_PROFILES = """CREATE TABLE IF NOT EXISTS demand_profiles (
    name VARCHAR PRIMARY KEY,
    step_minutes DOUBLE NOT NULL,
    sessions DOUBLE[] NOT NULL,
    source VARCHAR NOT NULL,
    start_time VARCHAR,
    description VARCHAR NOT NULL DEFAULT '',
    created_at TIMESTAMP NOT NULL
)"""
_SCHEMA.append(_DEMAND_PROFILES)

_POINT_COLUMNS = ("batch", "latency_ms", *OPTIONAL_POINT_FIELDS)
_SELECT_CURVES = (
    "SELECT id, model, card, precision, resolution, mig_profile, source, created_at, environment, "
    "flag, renamed_from FROM curves"
)
_INSERT_CURVES = (
    "INSERT INTO curves (id, model, card, precision, resolution, mig_profile, source, "
    "created_at, environment, flag, renamed_from) SELECT unnest($1::VARCHAR[]), "
    "unnest($2::VARCHAR[]), unnest($3::VARCHAR[]), unnest($4::VARCHAR[]), "
    "unnest($5::VARCHAR[]), unnest($6::VARCHAR[]), unnest($7::VARCHAR[]), "
    "unnest($8::TIMESTAMP[]), unnest($9::VARCHAR[]), unnest($10::VARCHAR[]), "
    "unnest($11::VARCHAR[])"
)
# Columns in the order of _POINT_COLUMNS (the order of Point's fields).
_INSERT_POINTS = (
    "INSERT INTO points (curve_id, batch, latency_ms, p10_ms, p50_ms, p90_ms, p99_ms, std_ms, "
    "n, memory_mb) SELECT unnest($1::VARCHAR[]), unnest($2::INTEGER[]), unnest($3::DOUBLE[]), "
    "unnest($4::DOUBLE[]), unnest($5::DOUBLE[]), unnest($6::DOUBLE[]), unnest($7::DOUBLE[]), "
    "unnest($8::DOUBLE[]), unnest($9::INTEGER[]), unnest($10::DOUBLE[])"
)
_SELECT_POINTS = (
    "SELECT curve_id, batch, latency_ms, p10_ms, p50_ms, p90_ms, p99_ms, std_ms, n, memory_mb "
    "FROM points WHERE curve_id IN (SELECT unnest($1::VARCHAR[])) ORDER BY curve_id, batch"
)
_CONFIG: dict[str, str | bool | int | float | list[str]] = {
    "autoinstall_known_extensions": False,
    "autoload_known_extensions": False,
}

WAIT_ENV = "PLANNER_DB_WAIT_S"
"""Environment variable: how many seconds a process waits for a store another one holds."""
DEFAULT_WAIT_S = 10.0
MAX_WAIT_S = 3600.0
_FIRST_BACKOFF_S = 0.01
_MAX_BACKOFF_S = 0.1

_LOCK_HOLDER = re.compile(r"PID (\d+)")
_DAMAGED = (
    "it may be damaged or not a planner store (restore a copy, or point PLANNER_DB or --db "
    "at another file)"
)
_LOCK_CONFLICT = "could not set lock on file"
_NO_PERMISSION = ("permission denied", "operation not permitted", "read-only file system")

# Opening a DuckDB file as a database of its own costs ~13 ms (most of it creating the
# database instance, which an in-memory one costs too); attaching it to an instance that is
# already there costs under 1 ms, and detaching it lets go of the file the same way. So
# each process keeps one in-memory instance, and an operation attaches the store file to
# it, works on a connection of its own (a cursor) and detaches the file again.
_ROOT: tuple[int, duckdb.DuckDBPyConnection] | None = None
_ROOT_GUARD = threading.Lock()


def _root_cursor() -> duckdb.DuckDBPyConnection:
    """A new connection (cursor) to this process's in-memory instance."""
    global _ROOT
    with _ROOT_GUARD:
        if _ROOT is None or _ROOT[0] != os.getpid():  # a forked child makes its own
            _ROOT = (os.getpid(), duckdb.connect(":memory:", config=_CONFIG))
        return _ROOT[1].cursor()


def _drop_root() -> None:
    """Forget this process's instance; it closes (with every file attached to it) once
    the connections still using it are closed."""
    global _ROOT
    with _ROOT_GUARD:
        if _ROOT is not None:
            with suppress(duckdb.Error):
                _ROOT[1].close()
        _ROOT = None


# One lock, one attachment name and one "current connection" per store file and process:
# every Store of the file takes the lock around an operation, so no two threads of this
# process ever have the file attached at once, a connection is never shared between
# threads, and a Store used inside another one's batch (same file, same thread) joins it.
_FILES: dict[str, tuple[threading.RLock, str, threading.local]] = {}
_FILES_GUARD = threading.Lock()


def _file_state(path: Path) -> tuple[threading.RLock, str, threading.local]:
    key = os.path.realpath(path)
    with _FILES_GUARD:
        if key not in _FILES:
            # The name is the code's own (identifiers cannot be bound as parameters);
            # the path, which is the user's, is always a bound parameter.
            _FILES[key] = (threading.RLock(), f"planner_store_{len(_FILES)}", threading.local())
        return _FILES[key]


def store_wait_s() -> float:
    """Seconds to wait for a busy store: ``PLANNER_DB_WAIT_S``, else 10."""
    text = os.environ.get(WAIT_ENV, "").strip()
    if not text:
        return DEFAULT_WAIT_S
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0 <= value <= MAX_WAIT_S:  # NaN fails this too
        raise BadInput(
            f"{WAIT_ENV}={text[:40]!r} is not a number of seconds from 0 to {MAX_WAIT_S:g}"
        )
    return value


def _reason(exc: BaseException) -> str:
    """The first line of a DuckDB error, without its "IO Error: " style prefix."""
    lines = str(exc).strip().splitlines() or [type(exc).__name__]
    first = re.sub(r"^[A-Za-z ]+ Error: ", "", lines[0])
    return first if len(first) <= 300 else first[:299] + "…"


def _now() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None, microsecond=0)


class Store:
    """A DuckDB-backed store of cards, curves and plans, shared by threads and processes.

    ``Store()`` uses ``PLANNER_DB`` or the per-user default; ``Store(path)`` a given file.
    The object holds no connection between operations (see the module docstring);
    ``batch()`` holds one across a few of them. ``wait_s`` is how long an operation waits
    for a file another process holds (default ``PLANNER_DB_WAIT_S``, else 10 s).
    ``read_only`` is true when the user may not write the file.
    """

    def __init__(
        self,
        path: str | Path | None = None,
        *,
        load_builtins: bool = True,
        wait_s: float | None = None,
    ) -> None:
        self.path = Path(path) if path is not None else default_store_path()
        self.wait_s = store_wait_s() if wait_s is None else wait_s
        self.read_only = self.path.is_file() and not os.access(self.path, os.W_OK)
        if not self.read_only:
            self._make_folder()
        self._lock, self._name, self._local = _file_state(self.path)
        self._jitter = random.Random()
        with self.batch():
            fresh = self._migrate()
        if fresh and load_builtins:
            self._load_builtins()

    # -- lifecycle ----------------------------------------------------------------------

    def close(self) -> None:
        """Nothing to release: the file is closed after every operation. Kept so that a
        ``Store`` can be used as a context manager."""

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _make_folder(self) -> None:
        folder = self.path.parent
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(
                f"cannot create the folder {folder} for the store {self.path} "
                f"({exc.strerror or exc}); point PLANNER_DB or --db at a file in a folder "
                "you can write"
            ) from None

    @contextmanager
    def batch(self) -> Iterator[None]:
        """Hold the file for the operations inside (one connection, opened once).

        Other processes wait while it is held, so keep it short: a few reads, never a
        simulation. Nested batches and operations join the outer one.
        """
        with self._connection():
            yield

    @contextmanager
    def _connection(self) -> Iterator[duckdb.DuckDBPyConnection]:
        held: duckdb.DuckDBPyConnection | None = getattr(self._local, "connection", None)
        if held is not None:
            yield held
            return
        with self._lock:
            connection = self._attach()
            self._local.connection = connection
            try:
                yield connection
            except (duckdb.IOException, duckdb.OutOfMemoryException, duckdb.FatalException) as exc:
                raise StoreError(
                    f"cannot read the store {self.path}: {_reason(exc)}; {_DAMAGED}"
                ) from None
            finally:
                self._local.connection = None
                try:
                    connection.execute("USE memory")
                    connection.execute(f"DETACH {self._name}")
                except duckdb.Error:
                    # Detaching checkpoints the file, which fails on a full disk (what was
                    # committed is safe in the write-ahead log). Let the whole instance go,
                    # so that the file is closed and its lock released all the same.
                    _drop_root()
                with suppress(duckdb.Error):
                    connection.close()

    def _attach(self) -> duckdb.DuckDBPyConnection:
        """A connection with the file attached and in use, waiting with backoff while
        another process has the file."""
        deadline = time.monotonic() + self.wait_s
        delay = _FIRST_BACKOFF_S
        connection = _root_cursor()
        while True:
            try:
                connection.execute(
                    f"ATTACH $path AS {self._name} (READ_ONLY {str(self.read_only).upper()})",
                    {"path": str(self.path)},
                )
                connection.execute(f"USE {self._name}")
                return connection
            except duckdb.IOException as exc:
                message = str(exc)
                if _LOCK_CONFLICT not in message.lower():
                    if not self.read_only and self.path.is_file() and _no_permission(message):
                        self.read_only = True  # the user may read the file, not write it
                        continue
                    connection.close()
                    raise self._unusable(exc) from None
                left = deadline - time.monotonic()
                if left <= 0:
                    connection.close()
                    raise self._busy(message) from None
                time.sleep(min(left, delay * self._jitter.uniform(0.5, 1.5)))
                delay = min(2 * delay, _MAX_BACKOFF_S)
            except duckdb.Error as exc:
                connection.close()
                raise self._unusable(exc) from None

    def require_writable(self) -> None:
        """StoreError when the user may only read the file (say so before long work)."""
        if self.read_only:
            raise StoreError(
                f"the store {self.path} is read-only for this user, so nothing can be "
                "stored in it; point PLANNER_DB or --db at a file you can write"
            )

    def _busy(self, message: str) -> StoreLocked:
        holder = _LOCK_HOLDER.search(message)
        who = f"process {holder[1]}" if holder else "another process"
        return StoreLocked(
            f"the store {self.path} is busy: {who} held it for more than {self.wait_s:g} s "
            f"(a long import?); try again, or set {WAIT_ENV} to wait longer"
        )

    def _unusable(self, exc: BaseException) -> StoreError:
        return StoreError(f"cannot open the store {self.path}: {_reason(exc)}; {_DAMAGED}")

    @contextmanager
    def _read(self) -> Iterator[duckdb.DuckDBPyConnection]:
        with self._connection() as connection:
            yield connection

    @contextmanager
    def _write(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """A connection inside a transaction that commits on success and rolls back on
        error; a write inside another one joins its transaction."""
        with self._connection() as connection:
            if getattr(self._local, "writing", False):
                yield connection
                return
            self.require_writable()
            self._local.writing = True
            try:
                connection.execute("BEGIN TRANSACTION")
                try:
                    yield connection
                except BaseException:
                    # The transaction may be gone already; either way nothing was committed.
                    with suppress(duckdb.Error):
                        connection.execute("ROLLBACK")
                    raise
                connection.execute("COMMIT")
            except (
                duckdb.IOException,
                duckdb.TransactionException,
                duckdb.OutOfMemoryException,
                duckdb.FatalException,
            ) as exc:
                raise StoreError(
                    f"cannot write the store {self.path}: {_reason(exc)}; nothing was stored"
                ) from None
            finally:
                self._local.writing = False

    def _migrate(self) -> bool:
        """Create the schema if the file has none; True when the file was new."""
        with self._read() as con:
            found = con.execute(
                "SELECT count(*) FROM duckdb_tables() WHERE database_name = current_database() "
                "AND schema_name = 'main' AND table_name = 'schema_version'"
            ).fetchone()
            current = None
            if found and found[0]:
                row = con.execute("SELECT max(version) FROM schema_version").fetchone()
                current = row[0] if row else None
        if current is not None and current > SCHEMA_VERSION:
            raise StoreError(
                f"the store {self.path} was written by a newer planner (schema "
                f"{current}, this one knows {SCHEMA_VERSION}); upgrade the planner"
            )
        if current == SCHEMA_VERSION:
            return False
        if self.read_only and current is not None:
            raise StoreError(
                f"the store {self.path} was written by an older planner (schema {current}) "
                "and is read-only for this user; open it once with write access to upgrade it"
            )
        if self.read_only:
            raise StoreError(
                f"the store {self.path} is read-only for this user and holds no planner "
                "data; point PLANNER_DB or --db at a planner store"
            )
        with self._write() as cur:
            for statement in _SCHEMA:
                cur.execute(statement)
            row = cur.execute("SELECT max(version) FROM schema_version").fetchone()
            if row is None or row[0] is None:
                cur.execute("INSERT INTO schema_version VALUES (?, ?)", [SCHEMA_VERSION, _now()])
                return True
            # Each step takes the schema from the version before it to its own; a step is
            # idempotent, so a file that reached part of the way is finished safely.
            steps = (
                (2, self._add_mig_profile_memory),
                (3, self._add_flags_and_plan_names),
                (4, self._add_demand_profiles),
            )
            for version, step in steps:
                if row[0] < version:
                    step(cur)
                    cur.execute("INSERT INTO schema_version VALUES (?, ?)", [version, _now()])
        return False

    @staticmethod
    def _add_demand_profiles(cur: duckdb.DuckDBPyConnection) -> None:
        """Schema 4: demand profiles stored by name (from schema 2 or 3 alike)."""
        cur.execute(_DEMAND_PROFILES)

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

    @staticmethod
    def _add_flags_and_plan_names(cur: duckdb.DuckDBPyConnection) -> None:
        """Schema 3: a curve's flag (a failed drift check) and the curve it renames; a
        saved plan's name and the headline it had when it was saved."""
        cur.execute("ALTER TABLE curves ADD COLUMN IF NOT EXISTS flag VARCHAR")
        cur.execute("ALTER TABLE curves ADD COLUMN IF NOT EXISTS renamed_from VARCHAR")
        cur.execute("ALTER TABLE plans ADD COLUMN IF NOT EXISTS name VARCHAR")
        cur.execute("ALTER TABLE plans ADD COLUMN IF NOT EXISTS headline VARCHAR")
        # Curves measured before the flag existed carry their drift warning in the
        # environment: flag them as a new measurement would be.
        cur.execute(
            "UPDATE curves SET flag = 'drift check failed: ' || "
            "json_extract_string(environment, '$.drift_warning') "
            "WHERE flag IS NULL AND json_extract_string(environment, '$.drift_warning') <> ''"
        )

    def _load_builtins(self) -> None:
        """Load the card catalogue and the built-in curves, once per store file."""
        from planner.curves.imports import ImportOptions, read_files

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
            self._insert_curves(cur, result.curves)
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
        with self.batch():
            card = self.card(name)
            with self._write() as cur:
                cur.execute(
                    "UPDATE cards SET price_per_hour = ? WHERE name = ?", [price, card.name]
                )
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

    # -- curves -------------------------------------------------------------------------

    def add_curves(self, curves: Sequence[Curve]) -> list[Curve]:
        """Store curves atomically; a curve already stored (same id) is left as it is.

        Returns the stored curves (with creation times), in the order given. Many curves
        go in as a few bulk statements, not a statement per point.
        """
        with self._write() as cur:
            ids, added = self._insert_curves(cur, curves)
            stored = self._curves_by_id(cur, [i for i in ids if i not in added])
        stored.update(added)
        return [stored[i] for i in ids]

    def _insert_curves(
        self, cur: duckdb.DuckDBPyConnection, curves: Iterable[Curve]
    ) -> tuple[list[str], dict[str, Curve]]:
        """Insert the curves not stored yet. Returns the ids of all of them, in order, and
        the ones inserted now as they read back (creation time set, environment through
        JSON). A curve's card takes the stored spelling of a known card; an unknown card
        is added."""
        known = dict(cur.execute("SELECT lower(name), name FROM cards").fetchall())
        ids: list[str] = []
        incoming: dict[str, Curve] = {}
        for curve in curves:
            card = known.get(curve.card.lower())
            if card is None:
                self._insert_card(
                    cur, card_from_dict({"name": curve.card, "description": "added by an import"})
                )
                card = known[curve.card.lower()] = curve.card
            if card != curve.card:
                curve = replace(curve, card=card)
            curve_id = curve.id
            ids.append(curve_id)
            incoming.setdefault(curve_id, curve)
        if not incoming:
            return ids, {}
        stored = {
            row[0]
            for row in cur.execute(
                "SELECT id FROM curves WHERE id IN (SELECT unnest($1::VARCHAR[]))",
                [list(incoming)],
            ).fetchall()
        }
        new = {i: c for i, c in incoming.items() if i not in stored}
        if not new:
            return ids, {}
        now = _now()
        created = [c.created_at.replace(tzinfo=None) if c.created_at else now for c in new.values()]
        environments = [
            json.dumps(dict(c.environment), sort_keys=True, default=str) for c in new.values()
        ]
        cur.execute(
            _INSERT_CURVES,
            [
                list(new),
                [c.model for c in new.values()],
                [c.card for c in new.values()],
                [c.precision for c in new.values()],
                [c.resolution for c in new.values()],
                [c.mig_profile for c in new.values()],
                [c.source for c in new.values()],
                created,
                environments,
                [c.flag for c in new.values()],
                [c.renamed_from for c in new.values()],
            ],
        )
        owners = [i for i, c in new.items() for _ in c.points]
        points = [p for c in new.values() for p in c.points]
        columns = [[getattr(p, column) for p in points] for column in _POINT_COLUMNS]
        # An empty list unnests to NULLs beside the full ones, and costs nothing to send:
        # most files leave the spread columns empty.
        columns = [c if any(v is not None for v in c) else [] for c in columns]
        cur.execute(_INSERT_POINTS, [owners, *columns])
        added = {
            curve_id: replace(
                curve,
                created_at=when.replace(tzinfo=UTC),
                environment=json.loads(environment),
            )
            for (curve_id, curve), when, environment in zip(
                new.items(), created, environments, strict=True
            )
        }
        return ids, added

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
            points = self._points(cur, [r[0] for r in rows])
        return [self._curve_from_row(row, points.get(row[0], ())) for row in rows]

    def curve(self, curve_id: str) -> Curve:
        """The curve with this id, or NotFound."""
        text = clean_text(curve_id, "curve id") or ""
        with self._read() as cur:
            found = self._curves_by_id(cur, [text])
        if text not in found:
            raise NotFound(f"no curve with id {text!r}; `planner curves list` shows the ids")
        return found[text]

    def _curves_by_id(self, cur: duckdb.DuckDBPyConnection, ids: Sequence[str]) -> dict[str, Curve]:
        wanted = list(dict.fromkeys(ids))
        if not wanted:
            return {}
        rows = cur.execute(
            _SELECT_CURVES + " WHERE id IN (SELECT unnest($1::VARCHAR[]))", [wanted]
        ).fetchall()
        points = self._points(cur, [r[0] for r in rows])
        return {row[0]: self._curve_from_row(row, points.get(row[0], ())) for row in rows}

    @staticmethod
    def _points(cur: duckdb.DuckDBPyConnection, ids: Sequence[str]) -> dict[str, tuple[Point, ...]]:
        if not ids:
            return {}
        out: dict[str, list[Point]] = {}
        for curve_id, *values in cur.execute(_SELECT_POINTS, [list(ids)]).fetchall():
            out.setdefault(curve_id, []).append(Point(*values))
        return {k: tuple(v) for k, v in out.items()}

    @staticmethod
    def _curve_from_row(row: Sequence[Any], points: tuple[Point, ...]) -> Curve:
        _id, model, card, precision, resolution, mig, source, created, environment = row[:9]
        flag, renamed_from = row[9:11]
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
            flag=flag,
            renamed_from=renamed_from,
        )

    def rename_curve(
        self, curve_id: str, *, model: str | None = None, card: str | None = None
    ) -> Curve:
        """Store the curve's points under another model or card name, as a new curve (new
        id, ``renamed_from`` the old one); the old curve stays for the saved plans that
        use it, as an edit leaves it. Returns the stored new curve."""
        with self.batch():
            renamed = self.curve(curve_id).renamed(model=model, card=card)
            return self.add_curves([renamed])[0]

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
        with self.batch():
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

    def save_plan(
        self, params: Mapping[str, Any], *, name: str | None = None, headline: str | None = None
    ) -> str:
        """Store plan parameters under a short id derived from them (saving twice is one
        plan), with an optional ``name`` and the ``headline`` the plan had; saving again
        with a name or headline sets them."""
        text = json.dumps(dict(params), sort_keys=True, separators=(",", ":"))
        plan_id = hashlib.sha256(text.encode("utf-8")).hexdigest()[:10]
        label = clean_text(name, "plan name", required=False)
        said = clean_text(headline[:MAX_TEXT] if headline else None, "headline", required=False)
        with self._write() as cur:
            cur.execute(
                "INSERT INTO plans (id, params, created_at, name, headline) "
                "VALUES (?, ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET "
                "name = coalesce(excluded.name, plans.name), "
                "headline = coalesce(excluded.headline, plans.headline)",
                [plan_id, text, _now(), label, said],
            )
        return plan_id

    def plans(self) -> list[SavedPlan]:
        """Every saved plan, newest first."""
        with self._read() as cur:
            rows = cur.execute(
                "SELECT id, name, created_at, headline, params FROM plans "
                "ORDER BY created_at DESC, id"
            ).fetchall()
        return [
            SavedPlan(
                id=plan_id,
                name=name,
                created_at=created.replace(tzinfo=UTC),
                headline=headline,
                params=json.loads(params),
            )
            for plan_id, name, created, headline, params in rows
        ]

    def plan(self, plan_id: str) -> dict[str, Any]:
        """The parameters saved under ``plan_id``, or NotFound."""
        with self._read() as cur:
            row = cur.execute("SELECT params FROM plans WHERE id = ?", [plan_id]).fetchone()
        if row is None:
            raise NotFound(f"no saved plan with id {plan_id!r}")
        loaded: dict[str, Any] = json.loads(row[0])
        return loaded

    # -- demand profiles ----------------------------------------------------------------

    def save_profile(self, profile: DemandProfile, *, replace: bool = False) -> DemandProfile:
        """Store a demand profile under its name. A name already stored with other values
        needs ``replace`` (saved plans name their profile, so replacing it changes what
        they show); a built-in shape's name cannot be taken."""
        if profile.name in SHAPES:
            raise BadInput(f"{profile.name!r} is the name of a built-in shape; choose another name")
        row = [
            profile.name,
            profile.step_minutes,
            list(profile.sessions),
            profile.source,
            profile.start,
            profile.description,
            _now(),
        ]
        with self._write() as cur:
            found = cur.execute(
                "SELECT step_minutes, sessions FROM demand_profiles WHERE name = ?",
                [profile.name],
            ).fetchone()
            if found is not None:
                if (found[0], tuple(found[1])) == (profile.step_minutes, profile.sessions):
                    return self.profile(profile.name)
                if not replace:
                    raise BadInput(
                        f"a profile called {profile.name!r} is stored with other values; "
                        "choose another name, or replace it (saved plans that name it will "
                        "show the new values)"
                    )
                cur.execute("DELETE FROM demand_profiles WHERE name = ?", [profile.name])
            cur.execute("INSERT INTO demand_profiles VALUES (?, ?, ?, ?, ?, ?, ?)", row)
        return self.profile(profile.name)

    def profile(self, name: str) -> DemandProfile:
        """The stored demand profile called ``name``, or NotFound."""
        try:
            key = clean_profile_name(name)
        except BadInput:
            raise NotFound(f"no stored demand profile called {str(name)[:40]!r}") from None
        with self._read() as cur:
            row = cur.execute(
                "SELECT name, step_minutes, sessions, source, start_time, description "
                "FROM demand_profiles WHERE name = ?",
                [key],
            ).fetchone()
        if row is None:
            raise NotFound(
                f"no stored demand profile called {key!r}; `planner profiles list` shows them"
            )
        return _profile_from_row(row)

    def profiles(self) -> list[DemandProfile]:
        """Every stored demand profile, by name."""
        with self._read() as cur:
            rows = cur.execute(
                "SELECT name, step_minutes, sessions, source, start_time, description "
                "FROM demand_profiles ORDER BY name"
            ).fetchall()
        return [_profile_from_row(row) for row in rows]

    def plans_using_profile(self, name: str) -> list[str]:
        """Ids of saved plans whose parameters name this demand profile."""
        with self._read() as cur:
            rows = cur.execute(
                "SELECT id FROM plans WHERE json_extract_string(params, '$.profile') = ? "
                "ORDER BY id",
                [name],
            ).fetchall()
        return [r[0] for r in rows]

    def delete_profile(self, name: str, *, force: bool = False) -> DemandProfile:
        """Delete a stored demand profile; one that saved plans name needs ``force``."""
        with self.batch():
            profile = self.profile(name)
            users = self.plans_using_profile(profile.name)
            if users and not force:
                raise BadInput(
                    f"profile {profile.name} is named by {len(users)} saved plan(s) "
                    f"({', '.join(users[:5])}); confirm to delete it anyway"
                )
            with self._write() as cur:
                cur.execute("DELETE FROM demand_profiles WHERE name = ?", [profile.name])
        return profile


def _profile_from_row(row: Sequence[Any]) -> DemandProfile:
    name, step, sessions, source, start, description = row
    return DemandProfile(
        name=name,
        sessions=tuple(sessions),
        step_minutes=step,
        source=source,
        start=start,
        description=description,
    )


def _no_permission(message: str) -> bool:
    lowered = message.lower()
    return any(text in lowered for text in _NO_PERMISSION)
