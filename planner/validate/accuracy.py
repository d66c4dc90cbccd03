"""The accuracy report (SPEC §5.2): how far the simulator's predictions are from a real
worker serving the same sessions, before and after calibration, and the measured seat cap
beside the predicted one.

``accuracy`` reads a finished load test (run here, stored, or imported from a bundle made
on another machine) and works out:

- the median and largest relative error of the slowest session's fps, the mean fps and
  the end-to-end p50 and p99 over the *loaded* runs (``LOADED`` of
  ``planner.validate.measured_vs_predicted``: on an idle device every session gets the
  source rate and fps errors are zero by construction, so those runs would flatter them);
- a held-out calibration: fitted on the runs with an odd session count only, and judged
  on the even ones, against the plain prediction of the same even runs. A calibration
  judged on the runs it was fitted to would prove little;
- each policy's seat cap measured on the worker (searched upward by ``--find-cap``, or,
  for a test without that search, read off its runs at 1, 2, … sessions, stopping at the
  first failure exactly as the search does) beside the predicted cap, plain and with the
  held-out calibration.

``markdown`` writes it as the page ``docs/accuracy.md`` is. Nothing here measures; the
figures are the load test's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

import numpy as np

from planner import display
from planner.curves.fit import fit_curve
from planner.errors import BadInput
from planner.plan.recommend import recommend
from planner.plan.request import Criteria
from planner.sim.calibration import Calibration
from planner.sim.simulate import simulate
from planner.validate.judge import cap_from_runs, prediction_request
from planner.validate.loadtest import calibrate
from planner.validate.measured_vs_predicted import (
    ACCURACY_METRICS,
    LOADED,
    METRICS,
    TARGETS,
    ErrorStats,
    Summary,
    error_stats,
)
from planner.validate.runs import SERVER_LOADED, SERVER_SOURCE, Cap, LoadTest, Run
from planner.validate.server.calibration import calibrated as server_calibrated
from planner.validate.server.calibration import fit_server
from planner.validate.server.leaves_out import (
    counts_text,
    leaves_out,
    server_intro,
    server_model,
    stored_errors,
)
from planner.validate.server.loadtest import SERVER_QUEUE

LABELS = {m.name: m.label for m in METRICS}


@dataclass(frozen=True)
class CapRow:
    """One policy's seat cap: measured on the worker, predicted plainly and with the
    held-out calibration (each with its range from the curve's band)."""

    policy: str
    measured: int
    searched_to: int
    how: str  # "searched on the worker" or "read off the runs"
    measured_reason: str
    predicted: tuple[int, int, int]  # cap, low, high
    calibrated: tuple[int, int, int] | None
    stored: tuple[int, int, int] | None = None  # with the calibration stored with the curve

    @staticmethod
    def _inside(value: int, cap: tuple[int, int, int]) -> bool:
        return min(cap) <= value <= max(cap)

    @property
    def agrees(self) -> bool:
        return self._inside(self.measured, self.predicted)

    @property
    def agrees_calibrated(self) -> bool | None:
        return None if self.calibrated is None else self._inside(self.measured, self.calibrated)

    @property
    def measured_text(self) -> str:
        at_least = self.measured == self.searched_to and "meets every" in self.measured_reason
        return f"at least {self.measured}" if at_least else str(self.measured)


@dataclass(frozen=True)
class Accuracy:
    """A load test judged (see the module docstring)."""

    test: LoadTest
    criteria: Criteria
    loaded: tuple[Run, ...]
    every: tuple[ErrorStats, ...]  # all loaded runs, plain prediction
    judged: tuple[Run, ...]  # the loaded runs with an even session count
    before: tuple[ErrorStats, ...]  # judged runs, plain prediction
    after: tuple[ErrorStats, ...]  # judged runs, held-out calibration
    held_out: Calibration | None
    held_out_note: str
    calibrated: dict[int, Summary]  # run index -> prediction with the held-out calibration
    caps: tuple[CapRow, ...]
    lateness_ms: np.ndarray
    # The same loaded runs and caps predicted without the batch-time spread (every batch
    # its median), where the runs were predicted with one: what the spread changes.
    without_spread: tuple[ErrorStats, ...] = ()
    caps_without_spread: dict[str, tuple[int, int, int]] = field(default_factory=dict)
    # A server's loaded runs against the stored calibration (``stored_errors``).
    stored: tuple[ErrorStats, ...] = ()

    def stats(self, which: str) -> dict[str, ErrorStats]:
        return {s.metric: s for s in getattr(self, which)}

    def met(self) -> dict[str, bool | None]:
        """Whether each §5.2 target is met by the median error after calibration (None:
        no loaded even run to judge it on)."""
        after = self.stats("after")
        out: dict[str, bool | None] = {}
        for name, target in TARGETS.items():
            s = after.get(name)
            out[name] = None if s is None or s.median is None else s.median <= target
        return out

    def as_dict(self) -> dict[str, Any]:
        late = self.lateness_ms
        return {
            "loadtest": self.test.id,
            "loaded_runs": len(self.loaded),
            "judged_runs": len(self.judged),
            "every": [s.as_dict() for s in self.every],
            "before": [s.as_dict() for s in self.before],
            "after": [s.as_dict() for s in self.after],
            "targets": TARGETS,
            "met": self.met(),
            "held_out_calibration": None if self.held_out is None else self.held_out.as_dict(),
            "held_out_note": self.held_out_note,
            "stored": [s.as_dict() for s in self.stored],
            "caps": [
                {
                    "policy": c.policy,
                    "measured": c.measured,
                    "measured_text": c.measured_text,
                    "how": c.how,
                    "predicted": list(c.predicted),
                    "calibrated": None if c.calibrated is None else list(c.calibrated),
                    "stored_calibration": None if c.stored is None else list(c.stored),
                    "agrees": c.agrees,
                    "agrees_calibrated": c.agrees_calibrated,
                }
                for c in self.caps
            ],
            "lateness_ms": None
            if late.size == 0
            else {
                "p50": float(np.percentile(late, 50)),
                "p99": float(np.percentile(late, 99)),
                "max": float(late.max()),
            },
        }


def accuracy(test: LoadTest, criteria: Criteria | None = None) -> Accuracy:
    """Judge ``test`` (see the module docstring); ``criteria`` are the seat cap's (the
    recommendation's defaults when None). BadInput when it has no runs."""
    if not test.runs:
        raise BadInput("the load test has no runs to judge")
    criteria = criteria or Criteria()
    loaded = tuple(r for r in test.runs if r.loaded)
    every = error_stats([(r.measured, r.predicted) for r in loaded])

    fitting = [r for r in test.runs if r.sessions % 2 == 1 and r.records is not None]
    # A server's runs carry its curve's per-request cost, which a calibration replaces.
    per_request = test.curve.per_request_ms if test.source == SERVER_SOURCE else 0.0
    held_out: Calibration | None = None
    note = ""
    if test.source == SERVER_SOURCE:
        # A server's records say when each request was answered, not which batch ran it:
        # its calibration is fitted to the runs' figures (``planner.validate.server``).
        odd = [r for r in test.runs if r.sessions % 2 == 1]
        try:
            held_out = fit_server(odd, test.curve.id, per_request)
        except BadInput as exc:
            note = "; ".join(exc.problems)
    elif not fitting:
        note = "no run with an odd session count kept its records: nothing to fit"
    else:
        try:
            held_out = calibrate(fitting, test.curve.id)
        except BadInput as exc:
            note = "; ".join(exc.problems)
    judged = tuple(r for r in loaded if r.sessions % 2 == 0)
    calibrated: dict[int, Summary] = {}
    if held_out is not None:
        for index, run in enumerate(test.runs):
            if run.sessions % 2 == 0:
                scenario = (
                    server_calibrated(held_out, run.scenario, per_request)
                    if test.source == SERVER_SOURCE
                    else held_out.apply(run.scenario)
                )
                calibrated[index] = Summary.of(simulate(scenario))
    before = error_stats([(r.measured, r.predicted) for r in judged])
    after = (
        error_stats(
            [
                (run.measured, calibrated[index])
                for index, run in enumerate(test.runs)
                if run.loaded and run.sessions % 2 == 0
            ]
        )
        if held_out is not None
        else ()
    )
    spread = [r for r in loaded if r.scenario.spread]
    without = error_stats(
        [(r.measured, Summary.of(simulate(r.scenario.with_(spread=())))) for r in spread]
    )
    return Accuracy(
        stored=stored_errors(test, loaded) if test.source == SERVER_SOURCE else (),
        without_spread=tuple(without) if spread else (),
        caps_without_spread=_caps_without_spread(test, criteria) if spread else {},
        test=test,
        criteria=criteria,
        loaded=loaded,
        every=tuple(every),
        judged=judged,
        before=tuple(before),
        after=tuple(after),
        held_out=held_out,
        held_out_note=note,
        calibrated=calibrated,
        caps=tuple(_caps(test, criteria, held_out)),
        lateness_ms=test.lateness_ms,
    )


def predicted_cap(
    test: LoadTest,
    policy: str,
    criteria: Criteria,
    upto: int,
    calibration: Calibration | None = None,
    spread: bool = True,
) -> tuple[int, int, int]:
    """The recommendation's cap (cap, low, high) of ``policy`` for the scenarios ``test``
    served, searched up to ``upto`` sessions, with ``calibration`` where given; a server's
    as a server that queues every frame, at its curve's per-request cost. A calibration
    whose time outside the device alone exceeds the budget holds no session: 0."""
    if calibration is not None and test.options.slo_ms is None:
        stages = test.options.stages_for(test.pre_ms, test.post_ms)
        outside = calibration.overhead(test.options.overhead_ms)
        if stages.budget_problem(outside, criteria.budget_ms):
            return 0, 0, 0
    request = prediction_request(test.options, fit_curve(test.curve.points), policy, criteria,
                                 upto, (test.pre_ms, test.post_ms), calibration)  # fmt: skip
    request = replace(request, spread=False) if not spread else request
    if test.source == SERVER_SOURCE:
        request = replace(request, queue=SERVER_QUEUE, per_request_ms=test.curve.per_request_ms)
    option = recommend(request).options[0]
    return option.cap, option.cap_low, option.cap_high


def _caps(test: LoadTest, criteria: Criteria, held_out: Calibration | None) -> list[CapRow]:
    """Each policy's measured cap (searched, or read off the runs) beside the predicted
    one: plain, with the held-out calibration and with the stored one. A policy whose
    runs do not start at 1 session and go up one by one gets no row: its cap cannot be
    read off them."""
    if test.options.seed != 0:
        return []  # the recommendation draws seeds from 0: no like-for-like prediction
    searched = {c.policy: c for c in test.caps}
    stored = test.calibration if test.source == SERVER_SOURCE else None
    rows = []
    for policy in test.options.policies:
        cap: Cap | None = searched.get(policy)
        if cap is not None:
            measured, upto, reason = cap.measured, cap.largest, cap.measured_reason
            how = "searched on the worker"
        else:
            found = cap_from_runs(test, policy, criteria)
            if found is None:
                continue
            measured, upto, reason = found
            how = "read off the runs"
        predict = partial(predicted_cap, test, policy, criteria, upto)
        rows.append(
            CapRow(
                policy=policy,
                measured=measured,
                searched_to=upto,
                how=how,
                measured_reason=reason,
                predicted=predict(None),
                calibrated=None if held_out is None else predict(held_out),
                stored=predict(stored) if stored is not None else None,
            )
        )
    return rows


def _caps_without_spread(test: LoadTest, criteria: Criteria) -> dict[str, tuple[int, int, int]]:
    """Each policy's predicted cap with every batch at its median (no spread)."""
    if test.options.seed != 0:
        return {}
    upto = max(max(test.options.sessions), max((c.largest for c in test.caps), default=0))
    return {p: predicted_cap(test, p, criteria, upto, spread=False) for p in test.options.policies}


# ---------------------------------------------------------------------------------------
# The page


_share = display.fraction


def _cap_text(cap: tuple[int, int, int] | None) -> str:
    if cap is None:
        return "-"
    value, low, high = cap[0], min(cap), max(cap)
    return str(value) if low == high else f"{value} ({low}–{high})"


def _table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return lines


def markdown(result: Accuracy, command: str, title: str = "Accuracy") -> str:
    """The report as Markdown: what ran where, the targets, the errors before and after
    the held-out calibration, the seat caps, every run, and the command that made it
    (the one the load test recorded when it ran, else ``command``)."""
    test = result.test
    command = str(test.environment.get("command") or command)
    env = test.environment
    options = test.options
    points = test.curve.points
    server = test.source == SERVER_SOURCE
    lines = [f"# {title}", ""]
    if server:
        lines.append(server_intro(env))
    else:
        lines.append(
            "How far the planner's predictions are from a real worker serving the same "
            "sessions on the same device (SPEC §5.2): the reference worker "
            "(`planner/validate/worker/`) runs each scenario in real time, newest frame only, "
            "with the simulator's own policy code deciding every batch; the simulator "
            "predicts the same scenarios (the same capture times, bit for bit) on the curve "
            "measured first on that device. Generated by:"
        )
    lines += [
        "",
        "```",
        command,
        "```",
        "",
        "## What ran, and where",
        "",
    ]
    machine = env.get("machine") or {}
    order = ["cpu", "cores", "system", "python", "numpy"]
    keys = [k for k in order if k in machine] + sorted(k for k in machine if k not in order)
    described = ", ".join(f"{k} {machine[k]}" for k in keys) if machine else "unknown"
    lines.append(f"- Machine: {described}.")
    if env.get("device"):
        lines.append(f"- Device: {env['device']}.")
    start, end = env.get("load_average_start"), env.get("load_average_end")
    if start or end:

        def load(values: object) -> str:
            return "?" if not values else " / ".join(display.number(v) for v in values)  # type: ignore[attr-defined]

        lines.append(
            f"- Load average (1 / 5 / 15 min) at the start {load(start)}, at the end "
            f"{load(end)}; measured {env.get('started_at', '?')} to "
            f"{env.get('finished_at', '?')} (UTC)."
        )
    if env.get("torch"):
        threads = env.get("torch_threads")
        lines.append(
            f"- PyTorch {env['torch']}"
            + (f", {threads} thread{'s' if threads != 1 else ''} for the model" if threads
               else "")
            + "."
        )  # fmt: skip
    model = options.measure.model.path or f"the reference model at {options.measure.resolution}"
    if server:
        model = server_model(env)
    lines.append(
        f"- Model: {model}; curve `{test.curve.id}` ({test.curve.label}), measured "
        "batch latencies: "
        + ", ".join(
            f"{p.batch}: {display.ms(p.latency_ms)}"
            + (f" (p90 {display.ms(p.p90_ms)})" if p.p90_ms is not None else "")
            for p in points
        )
        + " (the simulator uses each batch size's median; the p90 shows the spread)."
    )
    if options.camera:
        lines.append(
            f"- CPU work: a {options.camera} uint8 camera frame resized and normalised before "
            f"the model ({display.ms(test.pre_ms)}) and the heatmap's arg-max after it "
            f"({display.ms(test.post_ms)}), measured here and given to the simulator as "
            f"`pre_ms` and `post_ms`, on {options.stages.cpu_workers} CPU "
            f"thread{'s' if options.stages.cpu_workers != 1 else ''}."
        )
    lines.append(
        f"- Sessions {', '.join(map(str, options.sessions))} at {display.fps(options.fps)}, "
        f"{options.duration_s:g} s per run, {options.seeds} seed"
        f"{'s' if options.seeds != 1 else ''} from {options.seed}, {options.phases} phases; "
        f"policies {', '.join(options.policies)}."
    )
    late = result.lateness_ms
    if late.size:
        p50, p99 = np.percentile(late, [50, 99])
        how, what = (
            ("the client sleeps on an asyncio loop until each frame's send time",
             "frames were sent")
            if server
            else ("the worker sleeps until each scheduled capture on a monotonic clock",
                  "arrivals were handled")
        )  # fmt: skip
        lines.append(
            f"- Arrival timing: {how}; {what} {display.ms(p50)} late at the median, "
            f"{display.ms(p99)} at p99 and {display.ms(late.max())} at worst, over "
            f"{late.size:,} arrivals."
        )
    lines += ["", "## Errors against the targets", ""]
    lines.append(
        "Relative error = (predicted − measured) / measured, over the loaded runs ("
        + (
            f"the server busy at least {display.fraction(SERVER_LOADED)} of the run: a server "
            "that queues every frame keeps the frame rate while its queue grows"
            if test.source == SERVER_SOURCE
            else f"the slowest session measured below {display.fraction(LOADED)} of the source rate"
        )
        + (", as it reports; where it gives no statistics, as predicted" if server else "")
        + f"): {len(result.loaded)} of {len(test.runs)} runs. The calibration is fitted on "
        f"the runs with an odd session count (sessions "
        f"{counts_text([r.sessions for r in test.runs if r.sessions % 2])}) and judged on "
        f"the loaded runs with an even one ({len(result.judged)}: sessions "
        f"{counts_text([r.sessions for r in result.judged])}), so it is judged on runs it "
        "has not seen."
    )
    lines.append("")
    before, after, every = result.stats("before"), result.stats("after"), result.stats("every")
    met = result.met()
    rows = []
    for name in ACCURACY_METRICS:
        b, a, e = before.get(name), after.get(name), every.get(name)
        verdict = {True: "met", False: "**missed**", None: "-"}[met.get(name)]
        rows.append(
            (
                LABELS[name],
                f"≤ {display.fraction(TARGETS[name])}",
                f"{_share(b.median if b else None)} / {_share(b.largest if b else None)}",
                f"{_share(a.median if a else None)} / {_share(a.largest if a else None)}",
                verdict,
                f"{_share(e.median if e else None)} / {_share(e.largest if e else None)}",
            )
        )
    lines += _table(
        (
            "figure",
            "target (median, after)",
            "even runs before: median / largest",
            "even runs after: median / largest",
            "target",
            "every loaded run, uncalibrated",
        ),
        rows,
    )
    lines.append("")
    if result.held_out is not None:
        c = result.held_out
        lines.append(
            f"Held-out calibration (odd session counts): a = {display.ms(c.a_ms)} per batch, "
            f"c = {display.ms(c.c_ms)} per frame of a batch, d = {display.ms(c.d_ms)} per frame "
            f"outside the device, from "
            + (f"{c.batches:,} batches and " if c.batches else "")
            + f"{c.frames:,} frames"
            + (f" ({c.note})" if c.note else "")
            + "."
        )
    else:
        lines.append(f"No held-out calibration: {result.held_out_note}.")
    if test.calibration is not None:
        c = test.calibration
        lines.append(
            f"The calibration fitted on every run and stored with the curve: a = "
            f"{display.ms(c.a_ms)}, c = {display.ms(c.c_ms)}, d = {display.ms(c.d_ms)}"
            + (f" ({c.note})" if server and c.note else "") + "."
        )  # fmt: skip
    lines += ["", "## Seat caps", ""]
    crit = result.criteria
    lines.append(
        f"Criteria: p{crit.percentile:g} end to end within {display.ms(crit.budget_ms)}, the "
        f"slowest session at least {display.fps(crit.min_fps)}"
        + (f", at most {display.fraction(crit.max_overwritten)} overwritten" if crit.max_overwritten
           is not None else "")
        + "; n = 1, 2, … sessions, stopping at the first failure, as the recommendation "
        "does. The prediction's range comes from the curve's uncertainty band."
    )  # fmt: skip
    lines.append("")
    if result.caps:
        cap_rows = [
            (
                c.policy,
                c.measured_text,
                c.how,
                _cap_text(c.predicted),
                "yes" if c.agrees else "**no**",
                _cap_text(c.calibrated),
                {True: "yes", False: "**no**", None: "-"}[c.agrees_calibrated],
                c.measured_reason,
            )
            for c in result.caps
        ]
        lines += _table(
            ("policy", "measured", "how", "predicted", "agrees", "calibrated", "agrees",
             "why the measured cap stops there"),
            cap_rows,
        )  # fmt: skip
        agree = sum(c.agrees for c in result.caps)
        lines += ["", f"Measured cap equal to the prediction or inside its range: {agree} of "
                      f"{len(result.caps)} policies uncalibrated"
                  + (f", {sum(bool(c.agrees_calibrated) for c in result.caps)} calibrated"
                     if any(c.calibrated for c in result.caps) else "") + "."]  # fmt: skip
        lines += [
            f"With the calibration stored with the curve (what `recommend` uses): "
            f"{c.policy} {_cap_text(c.stored)}."
            for c in result.caps
            if c.stored
        ]
    else:
        lines.append("No seat caps: the runs do not go up one session at a time from 1.")
    if server:
        lines += ["", *leaves_out(test, result.loaded, result.stored)]
    if result.without_spread:
        lines += ["", "## Batch-time spread", ""]
        lines.append(
            "The predictions above draw each batch's duration from the spread the curve's "
            "points measured (p10/p90: `planner/sim/batch_time.py`); here the same loaded "
            "runs, uncalibrated, against the prediction with every batch at its median, "
            "as the simulator ran before the spread was modelled."
        )
        lines.append("")
        off = {s.metric: s for s in result.without_spread}
        spread_rows = [
            (LABELS[name], f"{_share(off[name].median)} / {_share(off[name].largest)}",
             f"{_share(every[name].median)} / {_share(every[name].largest)}")
            for name in ACCURACY_METRICS if name in off and name in every
        ]  # fmt: skip
        lines += _table(("figure", "without spread: median / largest",
                         "with spread: median / largest"), spread_rows)  # fmt: skip
        if result.caps_without_spread:
            caps = {c.policy: c for c in result.caps}
            text = "; ".join(
                f"{policy} {_cap_text(cap)} without, {_cap_text(caps[policy].predicted)} with"
                + (f" (measured {caps[policy].measured_text})" if policy in caps else "")
                for policy, cap in result.caps_without_spread.items()
                if policy in caps
            )
            lines += ["", f"Predicted seat caps: {text}."]
    lines += ["", "## Every run", ""]
    lines.append(
        "Measured / predicted (relative error); for even session counts, the held-out "
        "calibrated prediction last."
    )
    lines.append("")
    run_rows = []
    for index, run in enumerate(test.runs):
        calibrated = result.calibrated.get(index)
        cells = []
        for name in ACCURACY_METRICS:
            m, p = getattr(run.measured, name), getattr(run.predicted, name)
            fps = name.endswith("_fps")
            write = partial(display.fps, unit=False) if fps else display.number
            text = "-" if m is None or p is None else f"{write(m)} / {write(p)}"
            if m and p is not None:
                text += f" ({display.fraction((p - m) / abs(m), sign=True)})"
            if calibrated is not None and m:
                q = getattr(calibrated, name)
                if q is not None:
                    text += f"; cal. {write(q)} ({display.fraction((q - m) / abs(m), sign=True)})"
            cells.append(text)
        run_rows.append((run.sessions, run.policy, "yes" if run.loaded else "", *cells))
    lines += _table(("sessions", "policy", "loaded", *(LABELS[n] for n in ACCURACY_METRICS)),
                    run_rows)  # fmt: skip
    lines.append("")
    return "\n".join(lines)
