"""Reliability: faults of the store file and of the machine under it.

A truncated or foreign file, a folder that cannot be created, a full disk at commit, an
import killed mid-way and a file the user may only read: each ends in one plain line and
exit status 2, and nothing committed before is lost. The commands run as real processes,
as they would next to a running dashboard.
"""

from __future__ import annotations

import os
import resource
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import duckdb
import pytest

from planner.bench.store import bulk_file
from planner.errors import StoreError
from planner.store.repository import Store

SMALL = "batch,latency_ms,model,card\n1,5,mine,gpu-x\n2,9,mine,gpu-x\n"


def planner(
    db: Path, *args: str, preexec: Callable[[], None] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "planner", "--db", str(db), *args],
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=preexec,  # sets a resource limit in the child; nothing thread-bound
        env={k: v for k, v in os.environ.items() if k != "PLANNER_DB_WAIT_S"},
    )


def one_line(run: subprocess.CompletedProcess[str]) -> str:
    """The single line a failed command printed, checking that it is one and exit 2."""
    assert run.returncode == 2, (run.returncode, run.stderr[-2000:])
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in run.stderr, run.stderr[-2000:]
    return lines[0]


def stored_ids(db: Path) -> list[str]:
    return sorted(c.id for c in Store(db).curves())


@pytest.fixture
def filled(db_path: Path, tmp_path: Path) -> Path:
    """A store with the built-in curves and one imported curve."""
    source = tmp_path / "mine.csv"
    source.write_text(SMALL)
    assert planner(db_path, "curves", "import", str(source)).returncode == 0
    return db_path


def test_a_truncated_store_is_one_line(filled: Path) -> None:
    """Issue 11.6: a truncated file raised duckdb's IOException as a traceback."""
    os.truncate(filled, os.path.getsize(filled) // 2)
    line = one_line(planner(filled, "curves", "list"))
    assert line.startswith(f"planner: cannot read the store {filled}: ")
    assert line.endswith("it may be damaged or not a planner store (restore a copy, or point "
                         "PLANNER_DB or --db at another file)")  # fmt: skip


@pytest.mark.parametrize(
    "content", [b"", b"hello", os.urandom(20_000)], ids=["empty", "text", "random"]
)
def test_a_file_that_is_no_store_is_one_line(db_path: Path, content: bytes) -> None:
    db_path.write_bytes(content)
    line = one_line(planner(db_path, "curves", "list"))
    assert line.startswith(f"planner: cannot open the store {db_path}: ")
    assert "may be damaged or not a planner store" in line
    assert db_path.read_bytes() == content  # left exactly as it was


def test_a_store_folder_that_cannot_be_made_is_one_line(tmp_path: Path) -> None:
    """Issue 11.6: the folder was made outside the error handling (FileExistsError)."""
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    line = one_line(planner(blocker / "sub" / "planner.duckdb", "curves", "list"))
    assert line.startswith(f"planner: cannot create the folder {blocker / 'sub'} for the store")


def test_a_full_disk_at_commit_stores_nothing_and_loses_nothing(
    filled: Path, tmp_path: Path
) -> None:
    """Issue 11.6: a full disk at commit was a TransactionException traceback. The disk
    is made "full" for the command with a file-size limit (RLIMIT_FSIZE)."""
    before = stored_ids(filled)
    big = tmp_path / "big.csv"
    big.write_bytes(bulk_file(2**20).replace(b"gpu-a", b"gpu-z"))

    def full_disk() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # fail the write, not the process
        resource.setrlimit(resource.RLIMIT_FSIZE, (2**20, 2**20))

    line = one_line(planner(filled, "curves", "import", str(big), preexec=full_disk))
    assert line.startswith(f"planner: cannot write the store {filled}: ")
    assert line.endswith("; nothing was stored")
    assert stored_ids(filled) == before
    assert planner(filled, "curves", "import", str(big)).returncode == 0  # room again


def test_an_import_killed_mid_way_leaves_all_or_nothing(filled: Path, tmp_path: Path) -> None:
    """kill -9 at several moments of a large import: the store opens afterwards and holds
    either none of the new curves or all of them, and everything it held before."""
    before = set(stored_ids(filled))
    big = tmp_path / "big.csv"
    big.write_bytes(bulk_file(2**20))
    expected_new = None
    for delay in (0.5, 1.0, 1.5, 2.5):
        run = subprocess.Popen(
            [sys.executable, "-m", "planner", "--db", str(filled), "curves", "import", str(big)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        time.sleep(delay)
        run.send_signal(signal.SIGKILL)
        run.wait(timeout=60)
        now = set(stored_ids(filled))
        assert before <= now
        added = now - before
        if added:
            expected_new = expected_new or added
            assert added == expected_new  # all of them
        if run.returncode == 0:
            break  # it finished before the kill: nothing more to learn from later kills


@contextmanager
def read_only(path: Path) -> Iterator[None]:
    """The file made unwritable for this user: ``chmod`` for a normal user, the
    immutable attribute for root (whom permission bits do not stop)."""
    if os.geteuid() == 0:
        if not shutil.which("chattr"):
            pytest.fail("root runs this test with chattr (e2fsprogs), which is missing")
        subprocess.run(["chattr", "+i", str(path)], check=True)
        try:
            yield
        finally:
            subprocess.run(["chattr", "-i", str(path)], check=True)
    else:
        mode = path.stat().st_mode
        path.chmod(0o444)
        try:
            yield
        finally:
            path.chmod(mode)


def test_a_store_the_user_may_only_read_is_listed_and_planned_from(
    filled: Path, tmp_path: Path
) -> None:
    """Issue 11.6: such a store is opened read-only, so listing and planning work and a
    write says why it cannot be done."""
    mine = next(c for c in Store(filled).curves() if c.model == "mine")
    source = tmp_path / "other.csv"
    source.write_text(SMALL.replace("mine", "other"))
    with read_only(filled):
        listed = planner(filled, "curves", "list")
        assert listed.returncode == 0, listed.stderr
        assert mine.id in listed.stdout
        plan = planner(filled, "recommend", "--curve", mine.id, "--seeds", "1",
                       "--duration-s", "2", "--max-sessions", "4")  # fmt: skip
        assert plan.returncode == 0, plan.stderr
        line = one_line(planner(filled, "curves", "import", str(source)))
        assert line == (
            f"planner: the store {filled} is read-only for this user, so nothing can be "
            "stored in it; point PLANNER_DB or --db at a file you can write"
        )
        assert one_line(planner(filled, "cards", "set-price", "t4", "1")).startswith(
            f"planner: the store {filled} is read-only"
        )
        # Said before measuring, not after minutes of it.
        measure = planner(filled, "measure", "--device", "cpu", "--batches", "1",
                          "--resolution", "16x8", "--store")  # fmt: skip
        assert one_line(measure).startswith(f"planner: the store {filled} is read-only")
        assert measure.stdout == ""
        assert Store(filled).read_only
    assert planner(filled, "curves", "import", str(source)).returncode == 0


def test_store_errors_are_planner_errors(db_path: Path) -> None:
    """The library raises StoreError (exit 2 on the command line, a message on a page)."""
    db_path.write_bytes(b"hello")
    with pytest.raises(StoreError, match="cannot open the store"):
        Store(db_path)


def test_a_store_held_by_a_foreign_connection_waits_then_works(filled: Path) -> None:
    """A process that holds the file as a plain DuckDB connection (a notebook, the duckdb
    shell) only delays the planner by as long as it holds it."""
    holder = subprocess.Popen(
        [sys.executable, "-c",
         f"import duckdb, time\ncon = duckdb.connect({str(filled)!r})\nprint('held', flush=True)\n"
         "time.sleep(1)\ncon.close()\n"],
        stdout=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    listed = planner(filled, "curves", "list")
    holder.wait(timeout=30)
    assert listed.returncode == 0, listed.stderr
    con = duckdb.connect(str(filled))  # and the planner let go of it afterwards
    con.close()


def test_another_applications_duckdb_file_is_left_as_it_was(tmp_path: Path, cli: Any) -> None:
    other = tmp_path / "sales.duckdb"
    with duckdb.connect(str(other)) as raw:
        raw.execute("CREATE TABLE sales (region VARCHAR, amount DOUBLE)")
        raw.execute("INSERT INTO sales VALUES ('north', 12.5)")
    before = other.read_bytes()
    run = cli("--db", other, "curves", "list")
    assert run.status == 2 and run.out == ""
    assert run.err.count("\n") == 1 and "another application (it holds sales)" in run.err
    assert other.read_bytes() == before  # no planner table, no built-in curve written
    with duckdb.connect(str(other), read_only=True) as raw:
        tables = raw.execute("SELECT table_name FROM duckdb_tables()").fetchall()
    assert tables == [("sales",)]


@pytest.mark.parametrize(
    "tables",
    [
        ["CREATE TABLE curves (id INTEGER, name VARCHAR)"],
        # Tables named like the planner's, a migration table of the same name among them.
        [
            "CREATE TABLE curves (id INTEGER, name VARCHAR)",
            "CREATE TABLE schema_version (version INTEGER)",
            "INSERT INTO schema_version VALUES (3)",
        ],
        [
            "CREATE TABLE curves (id INTEGER, name VARCHAR)",
            "CREATE TABLE schema_version (version INTEGER, applied_at TIMESTAMP)",
            "INSERT INTO schema_version VALUES (1, now()::TIMESTAMP)",
        ],
    ],
    ids=["curves", "curves-and-a-version", "curves-and-the-planners-version-table"],
)
def test_a_foreign_file_with_its_own_curves_table_is_left_as_it_was(
    tmp_path: Path, cli: Any, tables: list[str]
) -> None:
    other = tmp_path / "other.duckdb"
    with duckdb.connect(str(other)) as raw:
        for statement in tables:
            raw.execute(statement)
        raw.execute("INSERT INTO curves VALUES (1, 'theirs')")
    before = other.read_bytes()
    run = cli("--db", other, "curves", "list")
    assert run.status == 2 and run.out == ""
    assert run.err.count("\n") == 1 and "another application (it holds curves" in run.err
    assert other.read_bytes() == before


@pytest.mark.parametrize(
    ("store", "says"),
    [
        ("s3://bucket/planner.duckdb", "is a URL"),
        ("http://example.invalid/planner.duckdb", "is a URL"),
        (":memory:", "is not a file"),
    ],
)
def test_a_store_that_is_no_local_file_is_refused_and_makes_no_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cli: Any, store: str, says: str
) -> None:
    monkeypatch.chdir(tmp_path)
    for how in (("--db", store), ()):
        if not how:
            monkeypatch.setenv("PLANNER_DB", store)
        run = cli(*how, "curves", "list")
        assert run.status == 2 and run.err.count("\n") == 1 and says in run.err, run.err
    assert list(tmp_path.iterdir()) == []  # no "s3:" or "http:" folder


def test_a_named_pipe_or_a_folder_as_the_store_is_refused_at_once(tmp_path: Path, cli: Any) -> None:
    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)
    run = cli("--db", pipe, "curves", "list")  # opening a pipe would block until a writer
    assert run.status == 2 and "not a regular file" in run.err
    run = cli("--db", tmp_path, "curves", "list")
    assert run.status == 2 and "is a folder" in run.err


def test_a_store_path_with_an_overlong_name_is_one_line(tmp_path: Path, cli: Any) -> None:
    run = cli("--db", tmp_path / ("x" * 300) / "planner.duckdb", "curves", "list")
    assert run.status == 2 and run.err.count("\n") == 1 and "longer than 255 bytes" in run.err


def test_an_old_duckdb_is_named_with_the_fix(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(duckdb, "__version__", "1.5.6")
    with pytest.raises(
        StoreError, match=r"needs DuckDB 2\.0 or newer, and this Python has 1\.5\.6"
    ):
        Store(db_path)
    assert not db_path.exists()


# A query of a few seconds, so that Ctrl-C comes while it runs (DuckDB notices it at once
# or only at the query's end, depending on how its threads share the work).
_LONG_QUERY = "SELECT count(*) FROM range(500000000) t(x) WHERE x % 7 = 3"


def _interrupt_soon(delay: float = 0.1) -> threading.Timer:
    timer = threading.Timer(delay, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    return timer


def test_ctrl_c_while_a_query_runs_is_exit_130_and_one_line(
    cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DuckDB turns Ctrl-C during a query into ``RuntimeError: Query interrupted`` (a
    traceback and exit 1 before); the command stops as on any other Ctrl-C."""

    def slow_curves(self: Store, **_filters: object) -> list[object]:
        with self.read() as cur:
            _interrupt_soon()
            cur.execute(_LONG_QUERY).fetchall()
        return []

    monkeypatch.setattr(Store, "curves", slow_curves)
    run = cli("curves", "list")
    assert run.status == 130, run.err[-2000:]
    assert run.err == "planner: interrupted\n"


def test_ctrl_c_inside_a_write_rolls_back_and_the_store_works_afterwards(db_path: Path) -> None:
    with Store(db_path) as store:
        before = [c.id for c in store.curves()]
        with pytest.raises(KeyboardInterrupt), store.write() as cur:
            cur.execute("DELETE FROM points")
            _interrupt_soon()
            cur.execute(_LONG_QUERY).fetchall()
        assert [c.id for c in store.curves()] == before
