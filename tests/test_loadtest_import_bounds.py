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
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from planner.curves.curve import Point, make_curve
from planner.curves.fit import fit_curve
from planner.store.repository import Store
from planner.validate.loadtest import run_loadtest
from planner.validate.loadtest_store import loadtests
from planner.validate.options import LoadTestOptions
from planner.validate.worker.backends import SleepBackend
from planner.validate.worker.bundle import FRAMES, MANIFEST, write_bundle

Bundle = tuple[dict[str, Any], str]


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
