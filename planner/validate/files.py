"""The files a load test writes on request: every frame's record as CSV (``write_frames_csv``)
and its accuracy report in Markdown (``write_report``). Each returns the sentence that
says what it wrote; BadInput, in one line, when the file cannot be written."""

from __future__ import annotations

from pathlib import Path

from planner.errors import BadInput
from planner.plan.request import Criteria
from planner.validate.runs import LoadTest


def write_report(path: Path, test: LoadTest, criteria: Criteria, command: str) -> str:
    """The accuracy report of ``test`` (``planner.validate.accuracy``), its seat caps
    judged by ``criteria``, citing ``command``."""
    from planner.validate.accuracy import accuracy, markdown

    text = markdown(accuracy(test, criteria), command)
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise BadInput(f"--report {path}: cannot write ({exc.strerror})") from None
    return f"wrote the accuracy report to {path}"


def write_frames_csv(path: Path, test: LoadTest) -> str:
    """Every run's per-frame records, as the reference worker writes them."""
    from planner.validate.worker.bundle import write_frames

    runs = [(i, r.records) for i, r in enumerate(test.runs) if r.records is not None]
    if not runs:
        return f"no per-frame records to write to {path} (a summary import has none)"
    try:
        with path.open("w", newline="", encoding="utf-8") as handle:
            write_frames(handle, runs, extra=True)
    except OSError as exc:
        raise BadInput(f"--out {path}: cannot write ({exc.strerror})") from None
    return f"wrote {sum(r.frames for _, r in runs):,} frame records to {path}"
