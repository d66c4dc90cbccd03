"""A load test as people read it: the ``--json`` document (``summary``) and the text the
command prints (``lines``): measured against predicted run by run, the arrival lateness,
the seat caps, the calibration, the machine's load, and what only a server's load test
has (the per-request cost and the server's own count of each run, or why it gave none).
``planner loadtest`` prints these; nothing here prints."""

from __future__ import annotations

from typing import Any

import numpy as np

from planner import display
from planner.validate.measured_vs_predicted import Figure
from planner.validate.runs import LoadTest

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


def tables(test: LoadTest) -> list[tuple[str, list[tuple[Any, ...]]]]:
    """The comparison tables, each with its title: measured against predicted, and
    against the calibrated prediction where a run has one."""
    out = []
    for calibrated in (False, True):
        if calibrated and not any(r.calibrated for r in test.runs):
            continue
        rows = []
        for r in test.runs:
            figures = {f.metric.name: f for f in r.figures(calibrated)}
            rows.append((r.sessions, r.policy, *(cell(figures[n]) for n in NAMES)))
        what = "calibrated prediction" if calibrated else "predicted"
        out.append(
            (f"measured / {what} (relative error, or whether inside a measured range):", rows)
        )
    return out


def head(test: LoadTest) -> list[str]:
    """What the test is, above the tables."""
    out = [f"load test {test.id}: {test.source}, curve {test.curve.label} ({test.curve.id})"]
    if test.pre_ms or test.post_ms:
        out.append(
            f"CPU work per frame: pre {display.ms(test.pre_ms)}, post {display.ms(test.post_ms)} "
            f"(measured here, given to the simulator)"
        )
    return out


def tail(test: LoadTest) -> list[str]:
    """What follows the tables: lateness, caps, calibration, load, the server's counts."""
    out = []
    late = test.lateness_ms
    if late.size:
        p50, p99 = np.percentile(late, [50, 99])
        out.append(
            f"arrival lateness: p50 {display.ms(p50)}, p99 {display.ms(p99)}, "
            f"max {display.ms(late.max())} over {late.size:,} arrivals"
        )
    for cap in test.caps:
        verdict = "agrees" if cap.agrees else "differs"
        out.append(
            f"seat cap, {cap.policy}: measured {cap.measured}, predicted {cap.predicted_text} "
            f"({verdict}); measured: {cap.measured_reason}"
        )
    if test.calibration is not None:
        out.append(test.calibration.description)
    env = test.environment
    if "load_average_start" in env:
        end = env.get("load_average_end")
        out.append(
            f"load average (1 min): {display.number(env['load_average_start'][0])} at the start, "
            + (f"{display.number(end[0])} at the end" if end else "not read at the end")
        )
    return out + server_lines(test)


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
