"""A load test's raw results as plain files, to carry from the machine that has the
device to the one that runs the planner.

A bundle is a folder with ``loadtest.json`` (the format, the curve measured there in the
planner's JSON import format, the load test's options, the CPU stage costs, what it ran
on, and one entry per run: sessions, policy, seed and the latency table the worker's
scheduler used) and ``frames.csv`` (every frame of every run: a ``run`` column, then the
worker's record columns, ``planner.validate.worker.frames.COLUMNS``). ``planner loadtest import
FOLDER`` reads it back, simulates the same scenarios here and compares.

This module needs NumPy and the standard library only, so the script that runs a load
test on a bare GPU image (``scripts/accuracy_gpu.py``) can write bundles.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from planner import limits
from planner.errors import BadInput
from planner.limits import Bound
from planner.sim.scenario import MAX_ARRIVALS
from planner.validate.worker.frames import COLUMNS, TIME_COLUMNS, WorkerRun

FORMAT = "planner-loadtest-bundle/1"
MANIFEST = "loadtest.json"
FRAMES = "frames.csv"
MAX_BUNDLE_BYTES = 512 * 1024 * 1024
"""The largest frames file a bundle may have (about three million frames)."""
MAX_MANIFEST_BYTES = 64 * 1024 * 1024
"""The largest ``loadtest.json`` a bundle may have (a few kB per run)."""


def scheduler_table(batches: Sequence[int], latency_ms: Sequence[float], upto: int) -> list[float]:
    """Latency for batch 1..upto by straight lines through the measured points (beyond
    them, the line through the last two; below, the first two): what the worker's
    scheduler knows on a machine without the planner's curve fit. Only the ``deadline``
    policy reads it; the planner predicts with its own fit of the same points."""
    b = np.asarray(batches, np.float64)
    lat = np.asarray(latency_ms, np.float64)
    wanted = np.arange(1, upto + 1, dtype=np.float64)
    if b.size == 1:
        table = lat[0] * wanted / b[0]
    else:
        table = np.interp(wanted, b, lat)
        high = wanted > b[-1]
        table[high] = lat[-1] + (wanted[high] - b[-1]) * (lat[-1] - lat[-2]) / (b[-1] - b[-2])
        low = wanted < b[0]
        table[low] = lat[0] + (wanted[low] - b[0]) * (lat[1] - lat[0]) / (b[1] - b[0])
    return [float(max(v, 1e-3)) for v in np.maximum.accumulate(table)]


def write_bundle(
    folder: Path,
    *,
    curve: Mapping[str, Any],
    options: Mapping[str, Any],
    runs: Sequence[WorkerRun],
    pre_ms: float,
    post_ms: float,
    environment: Mapping[str, Any],
) -> None:
    """Write a bundle (see the module docstring) into ``folder`` (created if missing)."""
    folder.mkdir(parents=True, exist_ok=True)
    manifest = {
        "format": FORMAT,
        "curve": dict(curve),
        "options": dict(options),
        "pre_ms": pre_ms,
        "post_ms": post_ms,
        "environment": dict(environment),
        "runs": [
            {
                "run": i,
                "sessions": r.scenario.sessions,
                "policy": r.scenario.policy,
                "seed": r.scenario.seed,
                "latency_ms": list(r.scenario.latency_ms),
            }
            for i, r in enumerate(runs)
        ],
    }
    (folder / MANIFEST).write_text(json.dumps(manifest, indent=2, default=str) + "\n", "utf-8")
    with (folder / FRAMES).open("w", newline="", encoding="utf-8") as handle:
        write_frames(handle, [(i, r) for i, r in enumerate(runs)])


def write_frames(handle: Any, runs: Sequence[tuple[int, WorkerRun]], extra: bool = False) -> None:
    """Every frame of ``runs`` as CSV: ``run`` (and with ``extra``, ``sessions``,
    ``policy`` and ``seed``), then the record columns; missing times are empty."""
    writer = csv.writer(handle)
    head = ["run", *(["sessions", "policy", "seed"] if extra else []), *COLUMNS]
    writer.writerow(head)
    for number, run in runs:
        columns = run.columns()
        front = [number, *([run.scenario.sessions, run.scenario.policy, run.scenario.seed]
                           if extra else [])]  # fmt: skip
        for i in range(run.frames):
            row = list(front)
            for name in COLUMNS:
                value = columns[name][i]
                if name in TIME_COLUMNS:
                    row.append("" if math.isnan(value) else repr(float(value)))
                else:
                    row.append(str(value))
            writer.writerow(row)


def read_bundle(path: Path) -> tuple[dict[str, Any], dict[int, dict[str, list[Any]]]]:
    """A bundle's manifest and each run's frame columns (by run number). ``path`` is the
    folder or its ``loadtest.json``. BadInput when it is not a readable bundle."""
    manifest = read_manifest(path)
    return manifest, read_frames_file(path)


def _folder(path: Path) -> Path:
    return path.parent if path.is_file() else path


def read_manifest(path: Path) -> dict[str, Any]:
    """A bundle's ``loadtest.json`` (``path`` is the folder or the file itself) as read,
    its values not yet checked; BadInput when it is not a bundle's manifest: unreadable,
    larger than ``MAX_MANIFEST_BYTES``, not UTF-8, not JSON, nested too deep, or of
    another format."""
    from planner.curves.imports.native import load_json

    manifest_path = _folder(path) / MANIFEST
    text = read_bounded_text(manifest_path, MAX_MANIFEST_BYTES)
    manifest = load_json(str(manifest_path), text)
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise BadInput(f"{manifest_path}: not a load test bundle (format {FORMAT} expected)")
    return manifest


def read_frames_file(path: Path) -> dict[int, dict[str, list[Any]]]:
    """Each run's frame columns from a bundle's ``frames.csv`` (``path`` is the folder or
    a file in it); BadInput when the file is unreadable, too large, not UTF-8 or holds a
    row that is not worker records."""
    frames_path = _folder(path) / FRAMES
    return read_frames(frames_path.name, read_bounded_text(frames_path, MAX_BUNDLE_BYTES))


def read_bounded_text(path: Path, limit: int) -> str:
    """A file's text; BadInput when it cannot be read, is over ``limit`` bytes or is not
    UTF-8 (read at most ``limit + 1`` bytes, so a huge file or a pipe costs nothing)."""
    try:
        with path.open("rb") as handle:
            data = handle.read(limit + 1)
    except OSError as exc:
        raise BadInput(f"{path}: cannot read ({exc.strerror or exc})") from None
    if len(data) > limit:
        raise BadInput(f"{path}: larger than the {limit // 2**20} MiB limit")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise BadInput(f"{path}: not UTF-8 text") from None


_INTEGERS: dict[str, Bound] = {
    "run": limits.LOADTEST_RUN,
    "session": Bound(0, limits.SESSIONS.high - 1, whole=True),
    "frame": Bound(0, MAX_ARRIVALS - 1, whole=True),
    "batch": Bound(-1, MAX_ARRIVALS - 1, whole=True),
    "batch_size": Bound(0, limits.MAX_BATCH.high, whole=True),
}
"""The range of each whole-number column of the records (a batch of -1: none)."""


def read_frames(name: str, text: str) -> dict[int, dict[str, list[Any]]]:
    """Frame columns by run number from CSV text written by ``write_frames``; BadInput
    names the first line that is not CSV or not a row of worker records, or holds a
    number outside its range (``_INTEGERS``; times ``limits.RECORD_MS``, empty where a
    frame never got there)."""
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        return _frames(name, reader)
    except csv.Error as exc:
        raise BadInput(f"{name} line {reader.line_num}: not a readable CSV table ({exc})") from None


def _frames(name: str, reader: Any) -> dict[int, dict[str, list[Any]]]:
    header = next(reader, None)
    if header is None:
        raise BadInput(f"{name}: file is empty")
    header = [h.strip().lower() for h in header]
    missing = [c for c in ("run", *COLUMNS) if c not in header]
    if missing:
        raise BadInput(f"{name}: the columns {', '.join(missing)} are missing")
    at = {c: header.index(c) for c in ("run", *COLUMNS)}
    # Plain comparisons, not Bound.holds, on up to millions of cells: every range is closed.
    ranges = {c: (b.low, b.high) for c, b in _INTEGERS.items()}
    low_ms, high_ms = limits.RECORD_MS.low, limits.RECORD_MS.high
    out: dict[int, dict[str, list[Any]]] = {}
    for line, row in enumerate(reader, start=2):
        if not any(cell.strip() for cell in row):
            continue
        try:
            number = int(row[at["run"]])
            if not ranges["run"][0] <= number <= ranges["run"][1]:
                raise _OutOfRange("run", row[at["run"]])
            columns = out.setdefault(number, {c: [] for c in COLUMNS})
            for c in COLUMNS:
                cell = row[at[c]].strip()
                if c in TIME_COLUMNS:
                    value = float(cell) if cell else math.nan
                    if cell and not low_ms <= value <= high_ms:
                        raise _OutOfRange(c, cell)
                    columns[c].append(value)
                elif c == "status":
                    columns[c].append(cell)
                else:
                    whole = int(cell)
                    low, high = ranges[c]
                    if not low <= whole <= high:
                        raise _OutOfRange(c, cell)
                    columns[c].append(whole)
        except (ValueError, IndexError):
            raise BadInput(f"{name} line {line}: not a row of worker records") from None
        except _OutOfRange as exc:
            column, cell = exc.args
            bound = _INTEGERS.get(column, limits.RECORD_MS)
            unit = "" if column in _INTEGERS else " ms"
            raise BadInput(
                f"{name} line {line}: {column} {cell.strip()[:30]!r} must be {bound.words()}{unit}"
            ) from None
    return out


class _OutOfRange(Exception):
    """A cell (the second argument) of the column named first holds a number outside the
    column's range."""
