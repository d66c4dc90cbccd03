"""The store file: how processes and threads share one DuckDB file, and its transactions.

The file is shared by every process on the machine that uses it: the dashboard server and
any number of ``planner`` commands. DuckDB lets only one process have a file open at a
time, so a ``Store`` holds no connection between operations: each operation (or a short
``batch()`` of them) connects, does its work in one transaction and closes the file
again. A process that finds the file held by another one waits and retries with a short
backoff, up to ``wait_s`` seconds (``PLANNER_DB_WAIT_S``, default 10), and only then gives
up with a one-line ``StoreLocked`` message naming the holder.

Within one process, every ``Store`` of the same file shares one lock, so the sessions of a
Streamlit server (threads) take turns; a connection is never used by two threads. After
each hold a process that has held the file more than half the time lately leaves it free
for as long as it held it (at most ``MAX_GAP_S``), so a busy server cannot starve the
commands waiting for the file. Writes
run in a transaction each: an import either stores every curve it read or none. A file
the user may only read is opened read-only: listing and planning work, writing says why
it cannot. A damaged file, a folder that cannot be created or a full disk become a
one-line ``StoreError``; nothing stored before is lost.

``read()`` and ``write()`` are the transactions every table's code uses (the planner's own
records in ``planner.store.repository``, and the add-on stores of calibrations, load tests
and studies); opening a file brings its schema up to date (``planner.store.schema``).
"""

from __future__ import annotations

import math
import os
import random
import re
import signal
import stat
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Self, TypeVar

import duckdb

from planner.errors import BadInput, StoreError, StoreLocked
from planner.paths import default_store_path
from planner.store.schema import MIGRATIONS, SCHEMA_VERSION, TABLES

T = TypeVar("T")

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
MAX_GAP_S = 0.05
"""A process that has held the file more than half of the last second or so leaves it
free after each hold for as long as it held it (up to this) before taking it again; see
``StoreFile._connection``."""
_DUTY_TAU_S = 1.0

_LOCK_HOLDER = re.compile(r"PID (\d+)")
_DAMAGED = (
    "it may be damaged or not a planner store (restore a copy, or point PLANNER_DB or --db "
    "at another file)"
)
_LOCK_CONFLICT = "could not set lock on file"
_INTERRUPTED = "Query interrupted"
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
_HELD: dict[str, tuple[float, float, float]] = {}
"""Per store file, this process's recent holds: when the last one ended, how long it was,
and the time held lately (each second held counted with weight decaying over
``_DUTY_TAU_S``)."""


def _gap(key: str, now: float) -> float:
    """How long to leave the file free before this process takes it again: the last hold's
    length (at most MAX_GAP_S) while the process has held it more than half the time
    lately, else nothing (an occasional operation, a page rerun, pays nothing)."""
    ended, last, lately = _HELD.get(key, (0.0, 0.0, 0.0))
    if lately * math.exp(-(now - ended) / _DUTY_TAU_S) <= 0.5 * _DUTY_TAU_S:
        return 0.0
    return max(0.0, ended + min(last, MAX_GAP_S) - now)


def _held(key: str, taken: float, released: float) -> None:
    ended, _last, lately = _HELD.get(key, (released, 0.0, 0.0))
    decayed = lately * math.exp(-max(0.0, released - ended) / _DUTY_TAU_S)
    _HELD[key] = (released, released - taken, decayed + (released - taken))


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


_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
_MAX_NAME_BYTES = 255  # the longest file or folder name Linux, macOS and Windows allow


MIN_DUCKDB = (2, 0)
"""The oldest DuckDB the store works with (``pyproject.toml`` says the same)."""


def require_duckdb() -> None:
    """StoreError naming the fix when the installed DuckDB is older than ``MIN_DUCKDB``
    (1.x cannot parse the store's statements and reads no file that 2.x wrote)."""
    found = tuple(int(p) for p in re.findall(r"[0-9]+", duckdb.__version__)[:2])
    if found < MIN_DUCKDB:
        need = ".".join(map(str, MIN_DUCKDB))
        raise StoreError(
            f"the store needs DuckDB {need} or newer, and this Python has "
            f"{duckdb.__version__}: pip install 'duckdb>={need}'"
        )


def checked_path(path: Path) -> Path:
    """``path`` if it can be a store file; StoreError with the reason otherwise.

    A store is a local file: not a URL (``s3://…``, ``http://…``: DuckDB would treat
    them as remote or a folder named ``s3:`` would appear), not ``:memory:`` (nothing
    would be kept), and nothing that exists but is not a regular file (a folder, a named
    pipe that would block the open forever, a device).
    """
    text = str(path)
    where = "point PLANNER_DB or --db at a file"
    if _URL.match(text) or text.startswith(("s3:", "gs:", "az:", "http:", "https:")):
        raise StoreError(f"the store {text[:80]!r} is a URL; the store is a local file: {where}")
    if text.strip() in ("", ":memory:") or text.startswith(":memory:"):
        raise StoreError(f"the store {text[:80]!r} is not a file: {where}")
    if any(len(part.encode("utf-8", "surrogateescape")) > _MAX_NAME_BYTES for part in path.parts):
        raise StoreError(
            f"the store path {text[:60]!r}… has a name longer than {_MAX_NAME_BYTES} bytes: "
            f"{where} with shorter names"
        )
    with suppress(OSError):
        mode = path.stat().st_mode
        if not stat.S_ISREG(mode):
            kind = "a folder" if stat.S_ISDIR(mode) else "not a regular file"
            raise StoreError(f"the store {text[:120]} is {kind}: {where}")
    return path


def _reason(exc: BaseException) -> str:
    """The first line of a DuckDB error, without its "IO Error: " style prefix."""
    lines = str(exc).strip().splitlines() or [type(exc).__name__]
    first = re.sub(r"^[A-Za-z ]+ Error: ", "", lines[0])
    return first if len(first) <= 300 else first[:299] + "…"


@contextmanager
def uninterrupted() -> Iterator[None]:
    """Let a Ctrl-C that arrives inside the block wait for its end, then raise it.

    For a short write that must not be lost halfway, such as a study's buffered cells:
    DuckDB would stop the query and the cells would be gone. Only the main thread
    receives signals, so elsewhere the block runs as it is.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    before = signal.signal(signal.SIGINT, lambda number, _frame: caught.append(number))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, before)
    if caught:
        raise KeyboardInterrupt


def timestamp() -> datetime:
    """The time stored with a record: UTC to the second, without a zone (a DuckDB TIMESTAMP)."""
    return datetime.now(UTC).replace(tzinfo=None, microsecond=0)


class StoreFile:
    """One DuckDB store file, shared by threads and processes: connections, transactions
    and the schema (see the module docstring).

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
        wait_s: float | None = None,
    ) -> None:
        require_duckdb()
        self.path = checked_path(Path(path) if path is not None else default_store_path())
        self.wait_s = store_wait_s() if wait_s is None else wait_s
        self.read_only = self.path.is_file() and not os.access(self.path, os.W_OK)
        if not self.read_only:
            self._make_folder()
        self._lock, self._name, self._local = _file_state(self.path)
        self._jitter = random.Random()
        with self.batch():
            self.created = self._migrate()
            """Whether this open created the file's schema (a new, empty store)."""

    # -- lifecycle ----------------------------------------------------------------------

    def close(self) -> None:
        """Nothing to release: the file is closed after every operation. Kept so that a
        ``Store`` can be used as a context manager."""

    def __enter__(self) -> Self:
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
    def snapshot(self) -> Iterator[None]:
        """Hold the file for a few reads in one short read transaction: they see the file
        as it was when the block began, whatever another process commits meanwhile (a
        plan's curve, card and calibration read together). Inside a write or another
        snapshot it joins that transaction. Nothing inside may write."""
        with self._connection() as connection:
            if getattr(self._local, "writing", False) or getattr(self._local, "reading", False):
                yield
                return
            self._local.reading = True
            try:
                connection.execute("BEGIN TRANSACTION READ ONLY")
                try:
                    yield
                finally:
                    with suppress(duckdb.Error):
                        connection.execute("ROLLBACK")  # nothing to keep: it only read
            finally:
                self._local.reading = False

    @contextmanager
    def _connection(self) -> Iterator[duckdb.DuckDBPyConnection]:
        held: duckdb.DuckDBPyConnection | None = getattr(self._local, "connection", None)
        if held is not None:
            yield held
            return
        with self._lock:
            # Fairness to other processes: a busy server (many visitors' reads back to
            # back) would otherwise take the file again the moment it let go, and a
            # command retrying every 10-100 ms would rarely find it free, giving up with
            # "busy" although every single hold was short. So while this process has
            # held the file more than half the time lately, the file stays free after
            # each hold for as long as the hold was (at most MAX_GAP_S).
            key = str(self.path)
            rest = _gap(key, time.monotonic())
            if rest > 0:
                time.sleep(rest)
            connection = self._attach()
            taken = time.monotonic()
            self._local.connection = connection
            try:
                yield connection
            except (duckdb.IOException, duckdb.OutOfMemoryException, duckdb.FatalException) as exc:
                raise StoreError(
                    f"cannot read the store {self.path}: {_reason(exc)}; {_DAMAGED}"
                ) from None
            except (duckdb.InterruptException, RuntimeError) as exc:
                # Ctrl-C while a query runs: DuckDB stops the query and raises
                # ``RuntimeError: Query interrupted`` instead of KeyboardInterrupt.
                if isinstance(exc, duckdb.InterruptException) or _INTERRUPTED in str(exc):
                    raise KeyboardInterrupt from None
                raise
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
                _held(key, taken, time.monotonic())

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

    @contextmanager
    def remembering(self) -> Iterator[None]:
        """Within the block, this thread reads each record once (see ``remembered``).

        For preparing many plans from the same few curves, cards and calibrations (a
        study): the file is still held only for each read, never across the block, so
        other processes work in between; what they write meanwhile is not seen by the
        reads already made until the block ends. Nested blocks join the outer one.
        """
        if getattr(self._local, "memo", None) is not None:
            yield
            return
        self._local.memo = {}
        try:
            yield
        finally:
            self._local.memo = None

    def remembered(self, key: tuple[object, ...], read: Callable[[], T]) -> T:
        """``read()``, or inside ``remembering`` the value it gave for ``key`` before (a
        read that raises, such as NotFound, is not remembered)."""
        memo: dict[tuple[object, ...], Any] | None = getattr(self._local, "memo", None)
        if memo is None:
            return read()
        if key not in memo:
            memo[key] = read()
        value: T = memo[key]
        return value

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
    def read(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """A connection to read with (joins a batch or a write around it)."""
        with self._connection() as connection:
            yield connection

    @contextmanager
    def write(self) -> Iterator[duckdb.DuckDBPyConnection]:
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

    def _foreign(self, con: duckdb.DuckDBPyConnection) -> StoreError:
        """The line for a DuckDB file that holds tables but is no planner store."""
        others = con.execute(
            "SELECT table_name FROM duckdb_tables() WHERE database_name = "
            "current_database() UNION SELECT view_name FROM duckdb_views() WHERE "
            "database_name = current_database() AND NOT internal ORDER BY 1 LIMIT 4"
        ).fetchall()
        names = ", ".join(str(r[0])[:40] for r in others[:3])
        return StoreError(
            f"{self.path} is a DuckDB file of another application (it holds "
            f"{names}{', …' if len(others) > 3 else ''}), not a planner store; it "
            "was left as it was: point PLANNER_DB or --db at a planner store or a "
            "new file"
        )

    def _migrate(self) -> bool:
        """Create the schema if the file has none; True when the file was new."""
        with self.read() as con:
            found = con.execute(
                "SELECT count(*) FROM duckdb_tables() WHERE database_name = current_database() "
                "AND schema_name = 'main' AND table_name = 'schema_version'"
            ).fetchone()
            current = None
            if found and found[0]:
                if not _planner_tables(con):
                    raise self._foreign(con)
                row = con.execute("SELECT max(version) FROM schema_version").fetchone()
                current = row[0] if row else None
            else:
                others = con.execute(
                    "SELECT table_name FROM duckdb_tables() WHERE database_name = "
                    "current_database() UNION SELECT view_name FROM duckdb_views() WHERE "
                    "database_name = current_database() AND NOT internal ORDER BY 1 LIMIT 4"
                ).fetchall()
                if others:
                    # Another application's database: never write the planner's tables into it.
                    raise self._foreign(con)
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
        with self.write() as cur:
            for statement in TABLES:
                cur.execute(statement)
            row = cur.execute("SELECT max(version) FROM schema_version").fetchone()
            if row is None or row[0] is None:
                cur.execute(
                    "INSERT INTO schema_version VALUES (?, ?)", [SCHEMA_VERSION, timestamp()]
                )
                return True
            # Each step takes the schema from the version before it to its own; a step is
            # idempotent, so a file that reached part of the way is finished safely.
            for version, step in MIGRATIONS:
                if row[0] < version:
                    step(cur)
                    cur.execute("INSERT INTO schema_version VALUES (?, ?)", [version, timestamp()])
        return False


# What every planner store has had since its first schema: a table of a name as common as
# ``schema_version`` or ``curves`` in another application's file must not make the planner
# take that file for its own (and migrate it).
_SIGNATURE = {
    "schema_version": {"version", "applied_at"},
    "curves": {"id", "model", "card", "source", "created_at"},
    "points": {"curve_id", "batch", "latency_ms"},
}


def _planner_tables(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether the attached file's tables are the planner's, not only named like them."""
    rows = con.execute(
        "SELECT table_name, column_name FROM duckdb_columns() WHERE database_name = "
        "current_database() AND schema_name = 'main' AND table_name IN "
        "('schema_version', 'curves', 'points')"
    ).fetchall()
    found: dict[str, set[str]] = {}
    for table, column in rows:
        found.setdefault(str(table), set()).add(str(column))
    if found.get("schema_version") != _SIGNATURE["schema_version"]:
        return False
    return all(columns <= found.get(table, set()) for table, columns in _SIGNATURE.items())


def _no_permission(message: str) -> bool:
    lowered = message.lower()
    return any(text in lowered for text in _NO_PERMISSION)
