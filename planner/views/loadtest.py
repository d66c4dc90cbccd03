"""A load test's view: what the Validate page and ``planner loadtest`` (its runs, ``show``
and ``import``) show of one stored load test.

``loadtest_view`` composes what a person reads: the title and facts (the curve, the runs,
their length, the CPU work per frame, how late arrivals were handled, the machine's load),
the error tables (measured against predicted run by run, and against the calibrated
prediction where a run has one), the accuracy over the runs that loaded the device, the
seat caps, the calibration, what only a server's load test has, the series the charts
draw, and the command that shows it again. ``summary`` is the document ``--json`` prints.
The page and the command line only lay these out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from planner import display
from planner.sim.calibration import Calibration
from planner.validate.measured_vs_predicted import ErrorStats, Figure, error_stats
from planner.validate.runs import LoadTest, Run
from planner.views.table import Metric, Table

NAMES = (
    "min_fps",
    "mean_fps",
    "e2e_p50_ms",
    "e2e_p99_ms",
    "overwritten_fraction",
    "gpu_busy_fraction",
)
HEADER = (
    "sessions",
    "policy",
    "seed",
    "loaded",
    "slowest fps",
    "mean fps",
    "p50 ms",
    "p99 ms",
    "overwritten",
    "GPU busy",
)
"""The figures of the comparison table, and its header."""


def summary(test: LoadTest) -> dict[str, Any]:
    """The document ``--json`` prints."""
    late = test.lateness_ms
    return {
        "id": test.id,
        "source": test.source,
        "curve": test.curve.id,
        "curve_label": test.curve.label,
        "options": test.options.as_dict(),
        "pre_ms": test.pre_ms,
        "post_ms": test.post_ms,
        "environment": test.environment,
        "interrupted": test.interrupted,
        "runs": [
            {
                "sessions": r.sessions,
                "policy": r.policy,
                "seed": r.scenario.seed,
                "loaded": r.loaded,
                "measured": r.measured.as_dict(),
                "predicted": r.predicted.as_dict(),
                "calibrated": None if r.calibrated is None else r.calibrated.as_dict(),
                "figures": [f.as_dict() for f in r.figures()],
            }
            for r in test.runs
        ],
        "calibration": None if test.calibration is None else test.calibration.as_dict(),
        "applied_calibration": None if test.applied is None else test.applied.as_dict(),
        "caps": [c.as_dict() for c in test.caps],
        "lateness_ms": None
        if late.size == 0
        else {
            "p50": float(np.percentile(late, 50)),
            "p99": float(np.percentile(late, 99)),
            "max": float(late.max()),
            "arrivals": int(late.size),
        },
    }


def cell(figure: Figure) -> str:
    """One figure as ``measured / predicted (verdict)``, a measured range as ``a–b``."""
    m, p = figure.measured, figure.predicted
    if m is None and p is None:
        return "-"
    unit = figure.metric.unit

    def show(value: float) -> str:
        if unit == "fraction":
            return display.fraction(value)
        return display.fps(value, unit=False) if unit == "fps" else display.ms(value, unit=False)

    measured = "?" if m is None else show(m[0]) if m[0] == m[1] else f"{show(m[0])}–{show(m[1])}"
    predicted = "?" if p is None else show(p)
    return f"{measured} / {predicted} ({figure.verdict})"


def tables(test: LoadTest) -> list[tuple[str, list[tuple[str, ...]]]]:
    """The comparison tables, each with its title: measured against predicted, and
    against the calibrated prediction where a run has one."""
    out = []
    for calibrated in (False, True):
        if calibrated and not any(r.calibrated for r in test.runs):
            continue
        rows = []
        for r in test.runs:
            figures = {f.metric.name: f for f in r.figures(calibrated)}
            rows.append(
                (
                    str(r.sessions),
                    r.policy,
                    str(r.scenario.seed),
                    "yes" if r.loaded else "",
                    *(cell(figures[n]) for n in NAMES),
                )
            )
        what = "calibrated prediction" if calibrated else "predicted"
        out.append(
            (f"measured / {what} (relative error, or whether inside a measured range):", rows)
        )
    return out


def server_lines(test: LoadTest) -> list[str]:
    """What only a server's load test has: the per-request cost and the batch sizes the
    server's own statistics say it ran, run by run (or that they are unavailable)."""
    env = test.environment
    if "per_request_ms" not in env:
        return []
    out = [
        f"server {env.get('server')}, model {env.get('model')}: max batch "
        f"{env.get('max_batch_size')}, queue delay {env.get('max_queue_delay_us')} µs; "
        f"each request beyond the first costs {display.ms(env['per_request_ms'])}"
    ]
    if test.calibration is not None:
        out.append(
            f"plans on curve {test.curve.id} take calibration {test.calibration.id}, its "
            "newest, from now on (e.g. `planner recommend --curve "
            f"{test.curve.id} --policies triton --queue all`; `--calibration none` ignores it)"
        )
    for run in env.get("runs") or []:
        frames = run["frames"]
        what = f"{run['sessions']} session{'s' if run['sessions'] != 1 else ''}"
        ran = run.get("server")
        if ran is None:
            counted = "; the server's count of it is unavailable"
        else:
            sizes = ", ".join(f"{n}×{b}" for b, n in ran["batches"].items()) or "none"
            counted = (
                f"; the server ran {ran['frames']} frames in {ran['executions']} executions "
                f"(batches {sizes})"
            )
        out.append(
            f"{what}, seed {run['seed']}: {frames['delivered']} of "
            f"{frames['delivered'] + frames['failed'] + frames['timed out']} requests answered"
            + (
                f" ({frames['after the end']} after the end of the run, counted as queued then)"
                if frames.get("after the end")
                else ""
            )
            + counted
        )
    return out


# ---------------------------------------------------------------------------------------
# The view.

SERIES = {
    "min_fps": ("Slowest session", "frames per second"),
    "e2e_p99_ms": ("p99 latency, end to end", "ms"),
    "e2e_p50_ms": ("p50 latency, end to end", "ms"),
}
"""The figures charted against session count: their titles and units."""
INTERRUPTED = "This load test was interrupted; it holds the runs finished before that."
NO_CALIBRATION = "This load test has no calibration (a summary import holds no batches)."


@dataclass(frozen=True)
class PolicySeries:
    """One policy's runs as a chart draws them against session count: measured (an
    imported range's middle), predicted, and the calibrated prediction (the predicted
    figure where a run has none)."""

    policy: str
    sessions: tuple[int, ...]
    measured: tuple[float | None, ...]
    predicted: tuple[float | None, ...]
    calibrated: tuple[float | None, ...]


@dataclass(frozen=True)
class Chart:
    """A figure against session count: its title, unit, one series per policy, and the
    source rate where the figure is a frame rate (a line the measured should reach)."""

    metric: str
    title: str
    unit: str
    series: tuple[PolicySeries, ...]
    source_rate: tuple[tuple[int, int], float] | None


@dataclass(frozen=True)
class LoadTestView:
    """What a person reads of one load test: its title and facts, whether it was
    interrupted, the error tables (by title; the calibrated one where a run has a
    calibrated prediction), the accuracy over the loaded runs (predicted and
    calibrated), the seat caps, the calibration's sentence (None without one:
    ``NO_CALIBRATION``), the curve's calibrations, a server's own lines, the charts and
    the command."""

    id: int | None
    title: str
    facts: tuple[Metric, ...]
    interrupted: str | None
    errors: Table
    calibrated_errors: Table | None
    error_titles: tuple[str, str]
    accuracy: Table
    calibrated_accuracy: Table
    caps: Table
    calibration: str | None
    calibrations: Table
    server: tuple[str, ...]
    charts: tuple[Chart, ...]
    command: str


def loadtest_view(test: LoadTest, calibrations: Sequence[Calibration] = ()) -> LoadTestView:
    """The view of ``test``; ``calibrations`` are its curve's, newest first."""
    compared = tables(test)
    plain = Table(HEADER, tuple(compared[0][1])) if compared else Table(HEADER, ())
    calibrated = Table(HEADER, tuple(compared[1][1])) if len(compared) > 1 else None
    what = "measured / {} (relative error, or whether inside a measured range)"
    return LoadTestView(
        id=test.id,
        title=f"load test {test.id}: {test.source}, curve {test.curve.label} ({test.curve.id})",
        facts=_facts(test),
        interrupted=INTERRUPTED if test.interrupted else None,
        errors=plain,
        calibrated_errors=calibrated,
        error_titles=(what.format("predicted"), what.format("calibrated prediction")),
        accuracy=accuracy_table(accuracy(test, calibrated=False)),
        calibrated_accuracy=accuracy_table(accuracy(test, calibrated=True)),
        caps=Table(
            ("policy", "measured", "predicted", "verdict", "measured because"),
            tuple(
                (
                    c.policy,
                    str(c.measured),
                    c.predicted_text,
                    "agrees" if c.agrees else "differs",
                    c.measured_reason,
                )
                for c in test.caps
            ),
        ),
        calibration=None if test.calibration is None else test.calibration.description,
        calibrations=calibration_table(calibrations),
        server=tuple(server_lines(test)),
        charts=tuple(_chart(test, metric) for metric in SERIES),
        command=f"planner loadtest show {test.id}",
    )


def _facts(test: LoadTest) -> tuple[Metric, ...]:
    env = test.environment
    late = test.lateness_ms
    facts = [Metric("runs", str(len(test.runs)))]
    if test.options.duration_s:
        facts.append(
            Metric(
                "each run",
                f"{test.options.duration_s:g} s at {display.fps(test.options.fps)} per session",
            )
        )
    if test.pre_ms or test.post_ms:
        facts.append(
            Metric(
                "CPU work per frame",
                f"pre {display.ms(test.pre_ms)}, post {display.ms(test.post_ms)}",
                "measured here, given to the simulator",
            )
        )
    if late.size:
        p50, p99 = np.percentile(late, [50, 99])
        facts.append(
            Metric(
                "arrival lateness",
                f"p50 {display.ms(p50)}, p99 {display.ms(p99)}, max {display.ms(late.max())} "
                f"over {late.size:,} arrivals",
            )
        )
    if "load_average_start" in env:
        end = env.get("load_average_end")
        facts.append(
            Metric(
                "load average (1 min)",
                f"{display.number(env['load_average_start'][0])} at the start, "
                + (f"{display.number(end[0])} at the end" if end else "not read at the end"),
            )
        )
    return tuple(facts)


def accuracy(test: LoadTest, calibrated: bool = False) -> list[ErrorStats]:
    """``error_stats`` (``planner.validate.measured_vs_predicted``) over the runs that
    loaded the device."""
    pairs = [
        (r.measured, r.calibrated if calibrated and r.calibrated else r.predicted)
        for r in test.runs
        if r.loaded
    ]
    return error_stats(pairs)


def accuracy_table(stats: Sequence[ErrorStats]) -> Table:
    """Median and largest |relative error| per figure, over the loaded runs (no row
    where no run loaded the device)."""
    return Table(
        ("figure", "loaded runs", "median error", "largest error"),
        tuple(
            (s.metric, str(s.runs), display.fraction(s.median), display.fraction(s.largest))
            for s in stats
            if any(t.runs for t in stats)
        ),
    )


def calibration_table(found: Sequence[Calibration]) -> Table:
    """A curve's calibrations, newest first: each one's id, load test, date, the three
    constants and the batches it was fitted on."""
    return Table(
        ("calibration", "load test", "date", "a (ms per batch)", "c (ms per frame)",
         "d (ms outside the device)", "batches", "note"),
        tuple(
            (
                c.id,
                "" if c.loadtest is None else str(c.loadtest),
                "" if c.created_at is None else c.created_at.isoformat(sep=" "),
                f"{c.a_ms:.3f}",
                f"{c.c_ms:.4f}",
                f"{c.d_ms:.3f}",
                str(c.batches),
                c.note,
            )
            for c in found
        ),
    )  # fmt: skip


def _chart(test: LoadTest, metric: str) -> Chart:
    title, unit = SERIES[metric]
    by_policy: dict[str, list[Run]] = {}
    for run in test.runs:
        by_policy.setdefault(run.policy, []).append(run)
    series = []
    for policy, runs in by_policy.items():
        runs.sort(key=lambda r: (r.sessions, r.scenario.seed))
        series.append(
            PolicySeries(
                policy,
                tuple(r.sessions for r in runs),
                tuple(_measured(r, metric) for r in runs),
                tuple(getattr(r.predicted, metric) for r in runs),
                tuple(getattr(r.calibrated or r.predicted, metric) for r in runs),
            )
        )
    rate = None
    if metric == "min_fps":
        sessions = test.options.sessions
        rate = ((min(sessions), max(sessions)), test.options.fps)
    return Chart(metric, title, unit, tuple(series), rate)


def _measured(run: Run, metric: str) -> float | None:
    """A run's measured figure; an imported range's middle."""
    ranges = dict(run.ranges)
    if metric in ranges:
        low, high = ranges[metric]
        return (low + high) / 2.0
    value = getattr(run.measured, metric)
    return None if value is None else float(value)
