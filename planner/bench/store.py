"""``planner bench`` sections for imports and the shared store.

``import`` runs ``planner curves import`` on the largest file an upload may be (5 MiB of
the planner's CSV with model, card, precision and resolution columns: about 144,000 rows
making 18,000 curves of 8 points), into a store without its curves and again into the
store that holds them, and prints both times beside their target. It also times reading
the file alone, and sets the bulk statements against the way curves were stored before
them: one ``executemany`` per curve, timed on a sample of the same file. ``store``
measures what sharing the file costs: an operation now opens and closes the file, where a
server used to keep one connection open and take a cursor from it; and how soon a waiting
process gets the file after another one lets go of it.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import duckdb

from planner.bench.registry import Figures, best_of, section
from planner.curves.curve import Curve
from planner.curves.imports import MAX_FILE_BYTES, read_files

REFERENCE_SAMPLE_ROWS = 4_000
"""Rows of the big file stored the old way, one statement per point, for the reference."""
BULK_BATCHES = (1, 2, 3, 4, 6, 8, 12, 16)
"""The batch sizes of every curve of the big file."""
IMPORT_TARGET_S = 3.0
"""What ``planner curves import`` of the big file may take, into an empty or a filled store."""


def bulk_file(limit: int = MAX_FILE_BYTES) -> bytes:
    """A valid planner CSV of just under ``limit`` bytes: curves of 8 batch sizes each,
    one model per curve, all on one card at one precision and resolution (about 36 bytes
    a row)."""
    lines = ["batch,latency_ms,model,card,precision,resolution"]
    size = len(lines[0]) + 1
    index = 0
    while True:
        curve, step = divmod(index, len(BULK_BATCHES))
        batch = BULK_BATCHES[step]
        line = f"{batch},{batch * 9.8 + curve % 97 * 0.01:.3f},m-{curve:05d},gpu-a,fp16,512x288"
        if size + len(line) + 1 > limit:
            break
        lines.append(line)
        size += len(line) + 1
        index += 1
    # A curve cut short by the limit would be a curve of fewer points: end on a whole one.
    whole = 1 + (len(lines) - 1) // len(BULK_BATCHES) * len(BULK_BATCHES)
    return ("\n".join(lines[:whole]) + "\n").encode("ascii")


def _store_one_by_one(path: Path, curves: list[Curve]) -> None:
    """The former way to store curves: per curve, a lookup, an insert and an
    ``executemany`` of its points, on a connection the process keeps open."""
    con = duckdb.connect(str(path))
    try:
        con.execute("BEGIN TRANSACTION")
        for curve in curves:
            if con.execute("SELECT 1 FROM curves WHERE id = ?", [curve.id]).fetchone():
                continue
            con.execute(
                "INSERT INTO curves (id, model, card, precision, resolution, mig_profile, "
                "source, created_at, environment) VALUES (?, ?, ?, ?, ?, ?, ?, now(), '{}')",
                [curve.id, curve.model, curve.card, None, None, None, curve.source],
            )
            con.executemany(
                "INSERT INTO points (curve_id, batch, latency_ms) VALUES (?, ?, ?)",
                [[curve.id, p.batch, p.latency_ms] for p in curve.points],
            )
        con.execute("COMMIT")
    finally:
        con.close()


_CLI_IMPORT = """
import contextlib, json, os, sys, time
start = time.perf_counter()
from planner.cli import build_parser, main
build_parser()  # the modules every command loads
ready, cpu = time.perf_counter(), time.process_time()
with open(os.devnull, "w") as null, contextlib.redirect_stdout(null):
    status = main(sys.argv[1:])
done, cpu = time.perf_counter(), time.process_time() - cpu
print(json.dumps({"status": status, "import_s": done - ready, "cpu_s": cpu}))
"""


def _command(db: Path, file: Path) -> tuple[float, float, float]:
    """``planner --db DB curves import FILE`` in a process of its own, as a user runs it
    (its line per curve written to the null device): the seconds of the command once its
    modules are loaded, its CPU seconds (what a busy machine disturbs less), and the
    seconds of the whole process."""
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", _CLI_IMPORT, "--db", str(db), "curves", "import", str(file)],
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.perf_counter() - start
    lines = done.stdout.strip().splitlines()
    figures = json.loads(lines[-1]) if lines else {}
    if done.returncode != 0 or figures.get("status") != 0:
        raise RuntimeError(f"planner curves import {file} failed: {done.stderr.strip()[-500:]}")
    return float(figures["import_s"]), float(figures["cpu_s"]), wall


@section("import")
def bench_import(progress: Callable[[str], None]) -> Figures:
    """``planner curves import`` of a 5 MiB, ~144k-row CSV into an empty and a filled store,
    against its target; reading alone; per-point statements as the storing reference."""
    from planner.store.repository import Store

    data = bulk_file()
    rows = data.count(b"\n") - 1
    with tempfile.TemporaryDirectory() as folder:
        file = Path(folder) / "bulk.csv"
        file.write_bytes(data)
        db = Path(folder) / "bulk.duckdb"
        Store(db)  # a new store, with its built-in curves, before the clock starts
        progress(
            f"bench: import: planner curves import, {len(data) / 2**20:.1f} MiB, {rows:,} rows ..."
        )
        empty_s, empty_cpu_s, empty_process_s = _command(db, file)
        progress("bench: import: the same file again, into the store that holds its curves ...")
        filled_s, filled_cpu_s, filled_process_s = _command(db, file)

        start = time.perf_counter()
        result = read_files([("bulk.csv", data)])
        parse_s = time.perf_counter() - start

        sample = b"\n".join(data.split(b"\n")[: REFERENCE_SAMPLE_ROWS + 1]) + b"\n"
        curves = read_files([("sample.csv", sample)]).curves
        progress(f"bench: import: reference, {REFERENCE_SAMPLE_ROWS:,} rows one by one ...")
        reference = Store(Path(folder) / "reference.duckdb", load_builtins=False)
        begin = time.perf_counter()
        _store_one_by_one(reference.path, curves)
        one_by_one = time.perf_counter() - begin
        bulk = Store(Path(folder) / "bulk-only.duckdb", load_builtins=False)
        begin = time.perf_counter()
        bulk.add_curves(result.curves)
        store_s = time.perf_counter() - begin
    bulk_per_row = store_s / rows
    reference_per_row = one_by_one / REFERENCE_SAMPLE_ROWS
    return {
        "file_mib": len(data) / 2**20,
        "rows": rows,
        "curves": len(result.curves),
        "command_empty_s": empty_s,
        "command_filled_s": filled_s,
        "target_s": IMPORT_TARGET_S,
        "within_target": max(empty_s, filled_s) <= IMPORT_TARGET_S,
        "command_empty_cpu_s": empty_cpu_s,
        "command_filled_cpu_s": filled_cpu_s,
        "process_empty_s": empty_process_s,
        "process_filled_s": filled_process_s,
        "parse_s": parse_s,
        "store_s": store_s,
        "store_us_per_row": bulk_per_row * 1e6,
        "one_by_one_us_per_row": reference_per_row * 1e6,
        "store_speedup": reference_per_row / bulk_per_row,
        "reference_sample": f"{REFERENCE_SAMPLE_ROWS:,} rows of the same file",
    }


_HOLDER = """
import sys, time, duckdb
con = duckdb.connect(sys.argv[1])
print("held", flush=True)
time.sleep(float(sys.argv[2]))
con.close()
print(time.monotonic(), flush=True)
"""


@section("store")
def bench_store(progress: Callable[[str], None]) -> Figures:
    """What one store operation costs now that it opens and closes the file, against a
    cursor of a connection kept open; and the wait for a file another process held."""
    from planner.store.repository import Store

    with tempfile.TemporaryDirectory() as folder:
        store = Store(Path(folder) / "store.duckdb")
        some = store.curves()[0]
        progress("bench: store: operations that open and close the file ...")
        own_instance = best_of(lambda: duckdb.connect(str(store.path)).close(), 20)
        root = duckdb.connect(":memory:")

        def attach_detach() -> None:
            root.execute("ATTACH $path AS probe", {"path": str(store.path)})
            root.execute("DETACH probe")

        attached = best_of(attach_detach, 20)
        root.close()
        curves = best_of(store.curves, 20)
        one = best_of(lambda: store.curve(some.id), 20)

        def page_reads() -> None:
            # What a Plan page rerun asks the store for: the curves, the chosen curve and
            # its card (the catalogue).
            store.curves()
            store.curve(some.id)
            store.card(some.card)

        rerun = best_of(page_reads, 10)

        def batched() -> None:
            with store.batch():
                page_reads()

        rerun_batched = best_of(batched, 10)
        con = duckdb.connect(str(store.path))
        try:

            def cursor_query() -> None:
                cursor = con.cursor()
                cursor.execute("SELECT * FROM curves").fetchall()
                cursor.execute("SELECT * FROM points").fetchall()
                cursor.close()

            held_open = best_of(cursor_query, 20)
        finally:
            con.close()

        progress("bench: store: another process holds the file for 1 s ...")
        holder = subprocess.Popen(
            [sys.executable, "-c", _HOLDER, str(store.path), "1.0"],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert holder.stdout is not None
        holder.stdout.readline()
        asked = time.monotonic()
        store.curves()
        got = time.monotonic()
        released = float(holder.stdout.readline())
        holder.wait()
    return {
        "own_instance_ms": own_instance * 1e3,
        "attach_detach_ms": attached * 1e3,
        "curves_ms": curves * 1e3,
        "curve_ms": one * 1e3,
        "plan_rerun_reads_ms": rerun * 1e3,
        "plan_rerun_reads_batched_ms": rerun_batched * 1e3,
        "open_connection_cursor_ms": held_open * 1e3,
        "waited_for_holder_s": got - asked,
        "got_file_after_release_ms": (got - released) * 1e3,
    }
