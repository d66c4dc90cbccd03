"""Load tests from elsewhere, compared with the simulation the same way (SPEC §5.2).

Three kinds of file, told apart by their content:

- a **bundle** of the reference worker (``planner.validate.worker.bundle``: a folder with
  ``loadtest.json`` and ``frames.csv``, written on a GPU machine by
  ``scripts/accuracy_gpu.py``): every frame with its batch, so it is summarised, predicted
  and calibrated exactly like a load test run here (read by
  :mod:`planner.validate.loadtest_bundle`);
- **per-frame records** from any worker: a CSV with the columns ``session, capture_ms,
  done_ms, status`` (status delivered, overwritten, expired or pending; ``done_ms`` when
  the result went back, empty for frames not delivered). The scenario (policy, frame
  rate, sessions, duration, curve) is given as options. End-to-end latency is
  ``done_ms - capture_ms``; GPU-side figures are not in such a file and are not compared;
- **per-session summaries**: a CSV with ``session`` and any of ``fps, p50_ms, p99_ms,
  overwritten``, one row per session. A value may be a range where a report gave one
  (``16-20``, ``16–20``, ``20-25%``); overwritten is a fraction (``0.2``) or a percentage
  (``20%``).

What a summary can support, and nothing more: per-session figures do not say which
session is which, so they are compared as the ranges they allow for the whole run. The
slowest session's rate lies between the smallest low and the smallest high end, the mean
between the means of the low and high ends, and a pooled percentile or the overwritten
fraction between the smallest and the largest session's figure. The comparison says
whether the prediction falls inside each such range; only a single value gets a
relative error.

The simulation of an external worker's run cannot know its phases, so its prediction is
pooled over ``seeds`` phase draws (the recommendation's own default is 8): the mean of
each draw's slowest and mean session, and percentiles and fractions over all draws.
"""

from __future__ import annotations

import csv
import math
import re
import tempfile
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from planner import limits
from planner.curves.curve import Curve
from planner.curves.imports.base import Problems
from planner.errors import BadInput
from planner.sim.results import e2e_latencies
from planner.sim.scenario import Scenario
from planner.sim.simulate import simulate_charged
from planner.sim.work import Work
from planner.validate.loadtest_bundle import import_bundle, shown
from planner.validate.measured_vs_predicted import Interval, Summary
from planner.validate.options import LOADTEST_STAGES, LoadTestOptions
from planner.validate.runs import LoadTest, Run
from planner.validate.worker.bundle import (
    FRAMES,
    MANIFEST,
    read_bounded_text,
)

FORMATS = ("auto", "bundle", "frames", "summary")
MAX_TABLE_BYTES = 64 * 1024 * 1024
"""The largest per-frame or summary file read (about a million frames)."""
FRAME_COLUMNS = ("session", "capture_ms", "done_ms", "status")
SUMMARY_COLUMNS = ("fps", "p50_ms", "p99_ms", "overwritten")
SUMMARY_BOUNDS = {
    "fps": limits.MEASURED_FPS,
    "p50_ms": limits.MEASURED_MS,
    "p99_ms": limits.MEASURED_MS,
    "overwritten": limits.MAX_OVERWRITTEN,
}
"""The range of each figure of a per-session summary."""
STATUSES = ("delivered", "overwritten", "expired", "pending")


def detect(path: Path, text: str | None = None) -> str:
    """The kind of file at ``path``: ``bundle``, ``frames`` or ``summary``."""
    if path.is_dir() or path.suffix.lower() == ".json":
        return "bundle"
    return _table_kind(path.name, text or "")


def _table_kind(name: str, text: str) -> str:
    """``frames`` or ``summary``: the kind of CSV, from its header."""
    header = [h.strip().lower() for h in next(csv.reader([text.split("\n", 1)[0]]), [])]
    if "capture_ms" in header:
        return "frames"
    if "session" in header and any(c in header for c in SUMMARY_COLUMNS):
        return "summary"
    raise BadInput(
        f"{name}: not a load test file: a bundle folder (loadtest.json and frames.csv), "
        f"per-frame records ({', '.join(FRAME_COLUMNS)}) or per-session summaries (session "
        f"and some of {', '.join(SUMMARY_COLUMNS)})"
    )


def read_text(path: Path) -> str:
    """A table's text, refused above ``MAX_TABLE_BYTES`` or when it is not UTF-8."""
    text = read_bounded_text(path, MAX_TABLE_BYTES)
    if not text.strip():
        raise BadInput(f"{path}: file is empty")
    return text


# ---------------------------------------------------------------------------------------
# Per-frame records and per-session summaries from any worker


def predict(scenario: Scenario, seeds: int, work: Work | None = None) -> Summary:
    """The simulation of a run whose phases are unknown: ``seeds`` draws pooled (module
    docstring), each charged to ``work`` when given."""
    runs = [simulate_charged(scenario.with_(seed=scenario.seed + k), work) for k in range(seeds)]
    e2e = np.concatenate([e2e_latencies(r.scenario, r.records) for r in runs])
    gpu = np.concatenate([r.records.frame_latency for r in runs])
    arrived = max(sum(int(r.records.arrived.sum()) for r in runs), 1)

    def pct(values: np.ndarray, q: float) -> float | None:
        return float(np.percentile(values, q)) if values.size else None

    return Summary(
        min_fps=float(np.mean([r.min_fps for r in runs])),
        mean_fps=float(np.mean([r.mean_fps for r in runs])),
        max_fps=float(np.mean([r.max_fps for r in runs])),
        p50_ms=pct(gpu, 50.0),
        p99_ms=pct(gpu, 99.0),
        e2e_p50_ms=pct(e2e, 50.0),
        e2e_p99_ms=pct(e2e, 99.0),
        overwritten_fraction=sum(int(r.records.overwritten.sum()) for r in runs) / arrived,
        expired_fraction=sum(int(r.records.expired.sum()) for r in runs) / arrived,
        gpu_busy_fraction=float(np.mean([r.gpu_busy_fraction for r in runs])),
        frames=int(gpu.size),
        per_session_fps=tuple(v for r in runs for v in r.per_session_fps),
    )


def _table(name: str, text: str) -> tuple[list[str], list[tuple[int, list[str]]]]:
    from planner.curves.imports.base import read_table

    table = read_table(name, text)
    return [h.strip().lower() for h in table.header], table.records


def _sessions(labels: Sequence[str], scenario: Scenario, name: str) -> dict[str, int]:
    """Session labels (any text) to 0..N-1, in the file's sorted order; BadInput when
    their number is not the scenario's."""
    distinct = sorted(set(labels), key=lambda v: (len(v), v))
    if len(distinct) != scenario.sessions:
        raise BadInput(
            f"{name}: the file has {len(distinct)} session(s); the scenario has "
            f"{scenario.sessions} (give --sessions {len(distinct)})"
        )
    return {label: i for i, label in enumerate(distinct)}


def import_frames(
    name: str, text: str, scenario: Scenario, seeds: int, work: Work | None = None
) -> Run:
    """One run from per-frame records (module docstring), against ``scenario`` predicted
    over ``seeds`` phase draws. BadInput lists the bad rows with their lines."""
    header, records = _table(name, text)
    missing = [c for c in FRAME_COLUMNS if c not in header]
    if missing:
        raise BadInput(f"{name}: the columns {', '.join(missing)} are missing")
    at = {c: header.index(c) for c in FRAME_COLUMNS}
    found = Problems(name)
    labels: list[str] = []
    captures: list[float] = []
    dones: list[float] = []
    statuses: list[str] = []
    for line, cells in records:
        label = cells[at["session"]].strip()
        status = cells[at["status"]].strip().lower()
        if not label:
            found.append(f"{name} line {line}: session is empty")
            continue
        if status not in STATUSES:
            found.append(f"{name} line {line}: status {status[:30]!r} is not one of "
                         f"{', '.join(STATUSES)}")  # fmt: skip
            continue
        capture = _number(cells[at["capture_ms"]])
        done = _number(cells[at["done_ms"]])
        if capture is None:
            found.append(f"{name} line {line}: capture_ms is not a number")
            continue
        wrong = [(c, v) for c, v in (("capture_ms", capture), ("done_ms", done))
                 if v is not None and not limits.RECORD_MS.holds(v)]  # fmt: skip
        if wrong:
            found.extend(f"{name} line {line}: {c} {shown(v)} must be "
                         f"{limits.RECORD_MS.words()} ms" for c, v in wrong)  # fmt: skip
            continue
        if status == "delivered" and (done is None or done < capture):
            found.append(f"{name} line {line}: a delivered frame needs done_ms at or after "
                         "its capture_ms")  # fmt: skip
            continue
        labels.append(label)
        captures.append(capture)
        dones.append(done if done is not None else math.nan)
        statuses.append(status)
    found.check()
    if not labels:
        raise BadInput(f"{name}: no frames")
    index = _sessions(labels, scenario, name)
    session = np.array([index[v] for v in labels])
    first = min(captures)
    captured = np.array(captures) - first  # times from the first frame's capture
    finished = np.array(dones) - first
    kinds = np.array(statuses)
    delivered = kinds == "delivered"
    fps = np.bincount(session[delivered], minlength=scenario.sessions) / scenario.duration_s
    e2e = (finished - captured)[delivered]
    measured = Summary(
        min_fps=float(fps.min()),
        mean_fps=float(fps.mean()),
        max_fps=float(fps.max()),
        e2e_p50_ms=float(np.percentile(e2e, 50.0)) if e2e.size else None,
        e2e_p99_ms=float(np.percentile(e2e, 99.0)) if e2e.size else None,
        overwritten_fraction=float(np.mean(kinds == "overwritten")),
        expired_fraction=float(np.mean(kinds == "expired")),
        frames=int(delivered.sum()),
        per_session_fps=tuple(float(v) for v in fps),
    )
    return Run(scenario=scenario, measured=measured, predicted=predict(scenario, seeds, work))


_RANGE = re.compile(
    r"^\s*(?P<low>[0-9]*\.?[0-9]+(?:e[-+]?[0-9]+)?)\s*(?P<pct1>%?)\s*"
    r"(?:(?:-|–|—|to)\s*(?P<high>[0-9]*\.?[0-9]+(?:e[-+]?[0-9]+)?)\s*(?P<pct2>%?))?\s*$",
    re.IGNORECASE,
)


def parse_range(
    text: str, what: str, *, fraction: bool = False, bound: limits.Bound | None = None
) -> Interval | None:
    """``"16"`` -> (16, 16); ``"16-20"`` or ``"16–20"`` -> (16, 20); empty -> None. With
    ``fraction``, ``"20-25%"`` -> (0.2, 0.25), and a value above 1 without ``%`` is
    refused (a percentage written without its sign). With ``bound``, both ends must lie
    inside it (a number of thousands of digits reads as infinite, and is refused).
    BadInput says what is wrong."""
    if not text.strip():
        return None
    found = _RANGE.match(text)
    if found is None:
        raise BadInput(f"{what} {text.strip()[:30]!r} is not a number or a range such as 16-20")
    low = float(found["low"])
    high = float(found["high"]) if found["high"] is not None else low
    percent = bool(found["pct1"] or found["pct2"])
    if percent and not fraction:
        raise BadInput(f"{what} {text.strip()!r}: a percentage only applies to overwritten")
    if fraction:
        if percent:
            low, high = low / 100.0, high / 100.0
        elif high > 1.0:
            raise BadInput(
                f"{what} {text.strip()!r} is above 1: write a fraction (0.2) or a percentage (20%)"
            )
        if high > 1.0:
            raise BadInput(f"{what} {text.strip()[:30]!r} is above 100%")
    if bound is not None and not (bound.holds(low) and bound.holds(high)):
        raise BadInput(f"{what} {text.strip()[:30]!r} must be {bound.words()}")
    if high < low:
        raise BadInput(f"{what} {text.strip()!r}: the range ends below its start")
    return (low, high)


def import_summary(
    name: str, text: str, scenario: Scenario, seeds: int, work: Work | None = None
) -> Run:
    """One run from per-session summaries (module docstring), against ``scenario``
    predicted over ``seeds`` phase draws."""
    header, records = _table(name, text)
    if "session" not in header:
        raise BadInput(f"{name}: the column session is missing")
    given = [c for c in SUMMARY_COLUMNS if c in header]
    if not given:
        raise BadInput(f"{name}: none of the columns {', '.join(SUMMARY_COLUMNS)} is there")
    found = Problems(name)
    labels: list[str] = []
    values: dict[str, list[Interval | None]] = {c: [] for c in given}
    for line, cells in records:
        label = cells[header.index("session")].strip()
        if not label:
            found.append(f"{name} line {line}: session is empty")
            continue
        row: dict[str, Interval | None] = {}
        bad = False
        for column in given:
            try:
                row[column] = parse_range(
                    cells[header.index(column)], column, fraction=column == "overwritten",
                    bound=SUMMARY_BOUNDS[column],
                )  # fmt: skip
            except BadInput as exc:
                found.append(f"{name} line {line}: {exc.problems[0]}")
                bad = True
        if bad:
            continue
        labels.append(label)
        for column in given:
            values[column].append(row[column])
    found.check()
    if len(set(labels)) != len(labels):
        raise BadInput(f"{name}: a session has more than one row")
    _sessions(labels, scenario, name)
    ranges = summary_ranges(values)
    points: dict[str, Any] = {k: v[0] for k, v in ranges.items() if v is not None and v[0] == v[1]}
    measured = Summary(**points)
    return Run(
        scenario=scenario,
        measured=measured,
        predicted=predict(scenario, seeds, work),
        ranges=tuple((k, v) for k, v in ranges.items() if v is not None),
    )


def summary_ranges(values: dict[str, list[Interval | None]]) -> dict[str, Interval | None]:
    """What per-session figures allow for the whole run (module docstring); a figure
    some session does not give is unknown (None)."""

    def known(column: str) -> list[Interval] | None:
        items = values.get(column)
        if not items or any(v is None for v in items):
            return None
        return [v for v in items if v is not None]

    out: dict[str, Interval | None] = {}
    fps = known("fps")
    out["min_fps"] = None if fps is None else (min(v[0] for v in fps), min(v[1] for v in fps))
    out["mean_fps"] = None if fps is None else (
        float(np.mean([v[0] for v in fps])), float(np.mean([v[1] for v in fps]))
    )  # fmt: skip
    out["max_fps"] = None if fps is None else (max(v[0] for v in fps), max(v[1] for v in fps))
    for column, metric in (("p50_ms", "e2e_p50_ms"), ("p99_ms", "e2e_p99_ms"),
                           ("overwritten", "overwritten_fraction")):  # fmt: skip
        items = known(column)
        out[metric] = (
            None if items is None else (min(v[0] for v in items), max(v[1] for v in items))
        )
    return out


def _number(cell: str) -> float | None:
    text = cell.strip()
    if not text:
        return None
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def imported_test(curve: Curve, run: Run, kind: str, name: str, seeds: int) -> LoadTest:
    """A ``LoadTest`` holding one imported run (for storing and showing)."""
    s = run.scenario
    options = LoadTestOptions(
        sessions=(s.sessions,), policies=(s.policy,), fps=s.session_fps[0],
        duration_s=s.duration_s, phases=s.phases, seed=s.seed, seeds=seeds,
        jitter_ms=s.jitter_ms, overhead_ms=s.overhead_ms,
        stages=replace(LOADTEST_STAGES, network_ms=s.stages.network_ms),
        max_batch=s.max_batch, max_queue_delay_us=s.max_queue_delay_us, slo_ms=s.slo_ms,
    )  # fmt: skip
    return LoadTest(
        curve=curve,
        options=options,
        runs=(run,),
        pre_ms=s.stages.pre_ms,
        post_ms=s.stages.post_ms,
        source=f"imported {kind}",
        description=f"{kind} from {name}",
    )


def import_file(
    path: Path, scenario: Scenario | None, curve: Curve | None, seeds: int, fmt: str = "auto"
) -> LoadTest:
    """Any of the three kinds (module docstring). Per-frame records and summaries need
    the scenario and its curve; a bundle carries both."""
    if fmt not in FORMATS:
        raise BadInput(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
    if not path.exists():
        raise BadInput(f"{path}: no such file or folder")
    text = None if path.is_dir() or path.suffix.lower() == ".json" else read_text(path)
    kind = detect(path, text) if fmt == "auto" else fmt
    if kind == "bundle":
        return import_bundle(path)
    if scenario is None or curve is None or text is None:
        raise BadInput(
            f"{path.name}: {kind} need the scenario as options: --curve (or --points), "
            "--sessions, --policy, --fps and --duration-s"
        )
    reader = import_frames if kind == "frames" else import_summary
    run = reader(path.name, text, scenario, seeds)
    return imported_test(curve, run, "per-frame records" if kind == "frames" else
                         "per-session summary", path.name, seeds)  # fmt: skip


def import_upload(
    files: Sequence[tuple[str, bytes]],
    scenario: Scenario | None,
    curve: Curve | None,
    seeds: int,
    work: Work | None = None,
) -> LoadTest:
    """A load test from uploaded files (the dashboard's Validate page), as ``import_file``
    reads them from disk: a bundle's two files (``loadtest.json`` and ``frames.csv``), or
    one CSV of per-frame records or per-session summaries, which need ``scenario`` and
    its ``curve``. ``work`` is charged for the predictions. BadInput, naming the files as
    uploaded, for any other set of files or anything the importers refuse."""
    if not files:
        raise BadInput("choose the load test's files")
    names = [name for name, _ in files]
    if MANIFEST in names or FRAMES in names:
        if sorted(names) != sorted([MANIFEST, FRAMES]):
            raise BadInput(
                f"a bundle is the two files {MANIFEST} and {FRAMES} together; chosen: "
                + ", ".join(repr(n[:80]) for n in names[:10])
            )
        parts = dict(files)
        with tempfile.TemporaryDirectory(prefix="planner-bundle-") as folder:
            root = Path(folder)
            for fixed in (MANIFEST, FRAMES):  # fixed names: nothing of the user's in a path
                (root / fixed).write_bytes(parts[fixed])
            try:
                return import_bundle(root, work=work, name="the uploaded bundle")
            except BadInput as exc:  # the bundle's files by their names, not the folder's
                raise BadInput([p.replace(f"{root}/", "") for p in exc.problems]) from None
    if len(files) > 1:
        raise BadInput(
            "choose one CSV of per-frame records or per-session summaries, or a bundle's "
            f"{MANIFEST} and {FRAMES}; chosen: {len(files)} files"
        )
    name, data = files[0]
    if len(data) > MAX_TABLE_BYTES:
        raise BadInput(f"{name}: larger than the {MAX_TABLE_BYTES // 2**20} MiB limit")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise BadInput(f"{name}: not UTF-8 text") from None
    kind = _table_kind(name, text)
    what = "per-frame records" if kind == "frames" else "per-session summary"
    if scenario is None or curve is None:
        raise BadInput(f"{name}: a {what} needs the scenario: its curve, sessions and policy")
    reader = import_frames if kind == "frames" else import_summary
    run = reader(name, text, scenario, seeds, work)
    return imported_test(curve, run, what, name, seeds)


def import_scenario(
    curve: Curve, sessions: int, policy: str, fps: float, duration_s: float
) -> Scenario:
    """The scenario of an imported run given as a form gives it (the Validate page): its
    session count, policy, frame rate and duration on its curve, the rest as
    ``planner loadtest import`` takes it (``planner.validate.imported``). BadInput for a
    value out of its range (checked before the table is sized from the session count)."""
    from planner.validate.imported import imported_scenario

    if not limits.SESSIONS.holds(sessions):
        raise BadInput(f"sessions must be {limits.SESSIONS.words()}, not {sessions!r}")
    values = {"fps": float(fps), "duration_s": float(duration_s)}
    return imported_scenario(curve, int(sessions), policy, values)
