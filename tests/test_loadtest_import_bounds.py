"""``planner loadtest import``: what a bundle, a per-frame file or a summary may hold.

Every value read from a file is checked against its range in ``planner.limits`` before
anything is sized from it. Whatever is wrong gives one line (exit 2, the message on
standard error, nothing on standard output, nothing stored); a file with thousands of
problems gives the first ``MAX_PROBLEMS_PER_FILE`` and a count of the rest.

The bundle these tests change is a real one: two short runs of ``SleepBackend``, written
by ``write_bundle`` and imported untouched first.
"""

from __future__ import annotations

import copy
import json
import os
import resource
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from planner.curves.curve import Point, make_curve
from planner.curves.fit import fit_curve
from planner.curves.imports.base import MAX_PROBLEMS_PER_FILE
from planner.store.repository import Store
from planner.validate.loadtest import run_loadtest
from planner.validate.loadtest_store import loadtests
from planner.validate.options import LoadTestOptions
from planner.validate.worker.backends import SleepBackend
from planner.validate.worker.bundle import FRAMES, MANIFEST, write_bundle

Bundle = tuple[dict[str, Any], str]
REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Bundle:
    """A valid bundle's manifest (as read) and ``frames.csv`` (as text)."""
    curve = make_curve(model="m", card="c", points=[Point(1, 2.0), Point(2, 3.0), Point(4, 5.0)])
    options = LoadTestOptions(sessions=(1, 2), policies=("batch-all",), duration_s=0.3)
    backend = SleepBackend(fit_curve(curve.points).table(64))
    test = run_loadtest(options, curve=curve, backend=backend, stage_ms=(0.0, 0.0))
    folder = tmp_path_factory.mktemp("bundle")
    write_bundle(folder, curve=curve.as_dict(), options=options.as_dict(),
                 runs=[r.records for r in test.runs if r.records is not None], pre_ms=0.0,
                 post_ms=0.0, environment=test.environment)  # fmt: skip
    return json.loads((folder / MANIFEST).read_text("utf-8")), (folder / FRAMES).read_text("utf-8")


def _write(folder: Path, manifest: dict[str, Any] | str, frames: str | bytes) -> Path:
    folder.mkdir()
    text = manifest if isinstance(manifest, str) else json.dumps(manifest)
    (folder / MANIFEST).write_text(text, encoding="utf-8")
    if isinstance(frames, bytes):
        (folder / FRAMES).write_bytes(frames)
    else:
        (folder / FRAMES).write_text(frames, encoding="utf-8")
    return folder


def _refused(run: Any, store: Store, message: str, lines: int = 1) -> list[str]:
    """The import exited 2 with ``lines`` lines on standard error, the first holding
    ``message``, printed nothing else and stored nothing."""
    said = run.err.strip().splitlines()
    assert run.status == 2, run.err
    assert len(said) == lines, said
    assert all(line.startswith("planner: ") for line in said), said
    assert message in said[0], said
    assert run.out == ""
    assert loadtests(store) == []
    return said


def test_the_bundle_these_tests_change_imports(
    cli: Any, store: Store, bundle: Bundle, tmp_path: Path
) -> None:
    manifest, frames = bundle
    run = cli("loadtest", "import", _write(tmp_path / "b", manifest, frames))
    assert run.status == 0, run.err
    assert loadtests(store)[0]["runs"] == 2


def _nested(manifest: dict[str, Any], frames: str) -> tuple[str, str]:
    text = json.dumps(manifest)
    return text[:-1] + ', "deep": ' + "[" * 100_000 + "]" * 100_000 + "}", frames


def _wide_field(manifest: dict[str, Any], frames: str) -> tuple[dict[str, Any], str]:
    return manifest, frames + "0," + "x" * 200 * 1024 + "\n"


def _latin1(manifest: dict[str, Any], frames: str) -> tuple[dict[str, Any], bytes]:
    return manifest, frames.encode() + "0,é\n".encode("latin-1")


def _cell(column: str, value: str) -> Callable[[dict[str, Any], str], tuple[dict[str, Any], str]]:
    """A change to ``frames.csv``: ``column`` of its first row set to ``value``."""

    def change(manifest: dict[str, Any], frames: str) -> tuple[dict[str, Any], str]:
        header, first, rest = frames.split("\n", 2)
        cells = first.split(",")
        cells[header.split(",").index(column)] = value
        return manifest, "\n".join([header, ",".join(cells), rest])

    return change


@pytest.mark.parametrize(
    ("change", "message"),
    [
        pytest.param(_nested, f"{MANIFEST}: JSON nested more than", id="nested-100000-deep"),
        pytest.param(
            _wide_field,
            "not a readable CSV table (field larger than field limit",
            id="200-kib-field",
        ),
        pytest.param(_latin1, f"{FRAMES}: not UTF-8 text", id="latin-1-frames"),
        pytest.param(
            _cell("session", "1" * 30), f"{FRAMES} line 2: session '111", id="session-beyond-int64"
        ),
        pytest.param(
            _cell("post_end_ms", "1e300"),
            f"{FRAMES} line 2: post_end_ms '1e300' must be from -10000000000000 to "
            "10000000000000 ms",
            id="huge-time",
        ),
    ],
)
def test_a_bundle_file_that_cannot_be_read_as_one_is_one_line(
    cli: Any,
    store: Store,
    bundle: Bundle,
    tmp_path: Path,
    change: Callable[[dict[str, Any], str], tuple[Any, Any]],
    message: str,
) -> None:
    manifest, frames = change(copy.deepcopy(bundle[0]), bundle[1])
    run = cli("loadtest", "import", _write(tmp_path / "b", manifest, frames))
    _refused(run, store, message)


DELETE = object()


def _set(*path: Any) -> Callable[[dict[str, Any]], None]:
    """A change to a manifest: the value at ``path[:-1]`` set to ``path[-1]`` (deleted
    for ``DELETE``)."""
    *keys, value = path

    def change(manifest: dict[str, Any]) -> None:
        where: Any = manifest
        for key in keys[:-1]:
            where = where[key]
        if value is DELETE:
            del where[keys[-1]]
        else:
            where[keys[-1]] = value

    return change


def _repeat_first_run(manifest: dict[str, Any]) -> None:
    manifest["runs"].append(copy.deepcopy(manifest["runs"][0]))


@pytest.mark.parametrize(
    ("change", "message"),
    [
        # Missing or mistyped: once a traceback (KeyError, ValueError, TypeError, ...).
        pytest.param(_set("runs", 0, "run", DELETE), "runs[0] has no run", id="no-run"),
        pytest.param(
            _set("runs", 0, "run", "x"),
            "runs[0].run 'x' must be a whole number from 0 to 999999",
            id="text-run",
        ),
        pytest.param(_set("runs", 0, "seed", DELETE), "runs[0] has no seed", id="no-seed"),
        pytest.param(
            _set("runs", 0, "seed", [1]),
            "runs[0].seed [1] must be a whole number from 0 to",
            id="list-seed",
        ),
        pytest.param(
            _set("runs", 0, "sessions", DELETE), "runs[0] has no sessions", id="no-sessions"
        ),
        pytest.param(
            _set("runs", 0, "sessions", "two"),
            "runs[0].sessions 'two' must be a whole number from 1 to 4096",
            id="text-sessions",
        ),
        pytest.param(_set("runs", 0, "policy", DELETE), "runs[0] has no policy", id="no-policy"),
        pytest.param(_set("pre_ms", DELETE), "pre_ms is missing", id="no-pre-ms"),
        pytest.param(
            _set("pre_ms", "x"), "pre_ms 'x' must be from 0 to 60000 ms", id="text-pre-ms"
        ),
        pytest.param(_set("options", DELETE), "options is missing", id="no-options"),
        pytest.param(_set("options", [1]), "options must be an object", id="list-options"),
        pytest.param(
            _set("options", "input_shape", [float("inf"), 1, 1]),
            "options: not the options of a load test",
            id="infinite-input-shape",
        ),
        pytest.param(
            _set("options", "device", 3),
            "options: not the options of a load test (device: not text)",
            id="number-device",
        ),
        pytest.param(_set("environment", DELETE), "environment is missing", id="no-environment"),
        pytest.param(
            _set("environment", [1]), "environment must be an object", id="list-environment"
        ),
        pytest.param(
            _set("environment", "ab"), "environment must be an object", id="text-environment"
        ),
        # Once stored, then a traceback while printing the comparison.
        pytest.param(
            _set("environment", "load_average_start", "x"),
            "environment.load_average_start must be a list of one to three load averages",
            id="text-load-average",
        ),
        pytest.param(
            _set("runs", {"a": 1}), "runs must be a list of at least one run", id="object-runs"
        ),
        pytest.param(
            _set("runs", "abc"), "runs must be a list of at least one run", id="text-runs"
        ),
        pytest.param(_set("runs", 0, [1]), "runs[0] must be an object", id="list-run"),
        # Once stored although wrong.
        pytest.param(
            _set("runs", 0, "sessions", 1.5),
            "runs[0].sessions 1.5 must be a whole number from 1 to 4096",
            id="fractional-sessions",
        ),
        pytest.param(
            _set("pre_ms", float("nan")), "pre_ms nan must be from 0 to 60000 ms", id="nan-pre-ms"
        ),
        pytest.param(
            _set("pre_ms", 1e300), "pre_ms 1e+300 must be from 0 to 60000 ms", id="huge-pre-ms"
        ),
        pytest.param(
            _repeat_first_run,
            "runs[2].run 0 repeats runs[0].run; each run is listed once",
            id="duplicate-run",
        ),
    ],
)
def test_a_bad_value_in_the_manifest_is_one_line_and_nothing_is_stored(
    cli: Any,
    store: Store,
    bundle: Bundle,
    tmp_path: Path,
    change: Callable[[dict[str, Any]], None],
    message: str,
) -> None:
    manifest, frames = copy.deepcopy(bundle[0]), bundle[1]
    change(manifest)
    run = cli("loadtest", "import", _write(tmp_path / "b", manifest, frames))
    assert _refused(run, store, message)[0].startswith(f"planner: {MANIFEST}: ")


def _no_frames(k: int) -> dict[str, Any]:
    return {"run": 100 + k, "sessions": 1, "policy": "batch-all", "seed": 0}


def _bad_sessions(k: int) -> dict[str, Any]:
    return {**_no_frames(k), "sessions": 0}


@pytest.mark.parametrize(
    ("entry", "first", "rest"),
    [
        pytest.param(
            _no_frames,
            "run 100: no frames in the bundle",
            "× no frames in the bundle",
            id="runs-without-frames",
        ),
        pytest.param(
            _bad_sessions,
            "runs[2].sessions 0 must be a whole number from 1 to 4096",
            "× runs[…].sessions … must be a whole number",
            id="bad-session-counts",
        ),
    ],
)
def test_thousands_of_bad_runs_give_the_first_problems_and_a_count(
    cli: Any,
    store: Store,
    bundle: Bundle,
    tmp_path: Path,
    entry: Callable[[int], dict[str, Any]],
    first: str,
    rest: str,
) -> None:
    manifest, frames = copy.deepcopy(bundle[0]), bundle[1]
    manifest["runs"] += [entry(k) for k in range(20_000)]
    run = cli("loadtest", "import", _write(tmp_path / "b", manifest, frames))
    said = _refused(run, store, first, lines=MAX_PROBLEMS_PER_FILE + 1)
    more = 20_000 - MAX_PROBLEMS_PER_FILE
    assert f"… and {more:,} more of the same kinds ({more:,} {rest}" in said[-1]


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (3 * 2**30, 3 * 2**30))


def test_a_session_count_of_a_billion_is_refused_before_anything_is_sized(
    bundle: Bundle, db_path: Path, tmp_path: Path
) -> None:
    # Once a table of a billion latencies (21 GB) was built before the count was checked:
    # here under a 3 GiB address space and a minute, in a process of its own.
    manifest = copy.deepcopy(bundle[0])
    manifest["runs"][0]["sessions"] = 1_000_000_000
    folder = _write(tmp_path / "b", manifest, bundle[1])
    env = {**os.environ, "PLANNER_DB": str(db_path), "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-m", "planner", "loadtest", "import", str(folder)],
        capture_output=True, text=True, timeout=60, env=env, preexec_fn=_limit_memory,
    )  # fmt: skip
    said = done.stderr.strip().splitlines()
    assert done.returncode == 2, done.stderr[-2000:]
    assert said == [
        f"planner: {MANIFEST}: runs[0].sessions 1000000000 must be a whole number from 1 to 4096"
    ]
    assert done.stdout == ""
    with Store(db_path) as store:
        assert loadtests(store) == []


# -- per-frame records and per-session summaries ------------------------------------------


def test_a_summary_figure_of_5000_digits_is_refused(cli: Any, store: Store, tmp_path: Path) -> None:
    path = tmp_path / "summary.csv"
    path.write_text(f"session,fps\n0,{'9' * 5000}\n1,15-19\n", encoding="utf-8")
    run = cli("loadtest", "import", path, "--points", "1:19.6,2:39.2", "--sessions", "2",
              "--policy", "round-robin", "--seeds", "1")  # fmt: skip
    _refused(run, store, "summary.csv line 2: fps '999999999999999999999999999999' must be "
             "from 0 to 240")  # fmt: skip


@pytest.mark.parametrize(
    ("row", "message"),
    [
        pytest.param(
            "a,-1e300,5,delivered",
            "frames.csv line 4: capture_ms -1e+300 must be from "
            "-10000000000000 to 10000000000000 ms",
            id="capture-ms",
        ),
        pytest.param(
            "a,2,1e300,delivered", "frames.csv line 4: done_ms 1e+300 must be from", id="done-ms"
        ),
    ],
)
def test_a_record_time_out_of_range_is_refused(
    cli: Any, store: Store, tmp_path: Path, row: str, message: str
) -> None:
    path = tmp_path / "frames.csv"
    path.write_text(f"session,capture_ms,done_ms,status\na,1,2,delivered\nb,1,3,delivered\n{row}\n",
                    encoding="utf-8")  # fmt: skip
    run = cli("loadtest", "import", path, "--points", "1:19.6,2:39.2", "--sessions", "2",
              "--policy", "round-robin", "--duration-s", "1", "--seeds", "1")  # fmt: skip
    _refused(run, store, message)
