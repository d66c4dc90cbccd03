"""Validate: the planner's predictions against a real worker (SPEC §5.2).

Shows a stored load test (measured here, or imported from another worker): measured and
predicted figures against session count per policy, the error table, the accuracy over
the runs that loaded the device, measured against predicted seat caps, and the curve's
calibrations. Runs a small load test on this machine when PyTorch is installed, bounded
for the page and taking the server's turns; otherwise gives the command to run elsewhere.
"""

from __future__ import annotations

import shlex
from typing import Any

import numpy as np
import streamlit as st

from dashboard import cache, validate_charts
from dashboard.state import store
from dashboard.ui import flash, show_flash, show_problems, table
from dashboard.validate_charts import (
    accuracy,
    accuracy_rows,
    calibration_rows,
    error_rows,
    figure,
)
from planner import display, limits
from planner.errors import PlannerError
from planner.measure.options import MeasureOptions
from planner.store.calibrations import calibrations
from planner.text import md
from planner.validate.loadtest import run_loadtest
from planner.validate.loadtest_import import import_scenario, import_upload
from planner.validate.loadtest_store import load_loadtest, loadtests, save_loadtest
from planner.validate.options import LoadTestOptions, command_for
from planner.validate.runs import LoadTest
from planner.validate.runs import Progress as LoadTestProgress
from planner.validate.worker.bundle import FRAMES, MANIFEST
from planner.views.choices import POLICIES

PAGE_SESSIONS = (1, 2, 3)
"""The session counts a load test started from this page may have."""
PAGE_POLICIES = ("batch-all", "oldest-first", "round-robin", "triton")
PAGE_MAX_DURATION_S = 3.0
"""The longest run this page starts: a page never starts unbounded work (SPEC §5.4)."""
PAGE_RESOLUTIONS = ("16x9", "32x18", "64x36")


def label(row: dict[str, Any]) -> str:
    when = str(row["created_at"])[:16]
    return f"load test {row['id']} — {row['source']}, curve {row['curve_id']}, {when} UTC"


def show(test: LoadTest) -> None:
    env = test.environment
    late = test.lateness_ms
    facts = [f"curve **{md(test.curve.label)}** ({test.curve.id})", f"{len(test.runs)} runs"]
    if test.options.duration_s:
        facts.append(
            f"{test.options.duration_s:g} s each at {display.fps(test.options.fps)} per session"
        )
    if test.pre_ms or test.post_ms:
        facts.append(
            f"CPU work {display.ms(test.pre_ms)} before and {display.ms(test.post_ms)} "
            "after the GPU"
        )
    if late.size:
        p50, p99 = np.percentile(late, [50, 99])
        facts.append(
            f"arrivals handled {display.ms(p50)} late at the median, {display.ms(p99)} at p99"
        )
    if "load_average_start" in env:
        facts.append(f"load average {display.number(env['load_average_start'][0])} at the start")
    st.caption(" · ".join(facts))
    if test.interrupted:
        st.warning("This load test was interrupted; it holds the runs finished before that.")
    calibrated = any(r.calibrated for r in test.runs) and st.toggle(
        "Show the calibrated prediction", key="validate_calibrated"
    )
    left, right = st.columns(2)
    left.plotly_chart(figure(test, "min_fps", calibrated), key="validate_fps", width="stretch")
    right.plotly_chart(figure(test, "e2e_p99_ms", calibrated), key="validate_p99", width="stretch")
    st.subheader("Measured against predicted")
    st.caption(
        "Each figure: measured, predicted, and the relative error (predicted − measured) / "
        "measured; for a range an imported summary gave, whether the prediction falls "
        "inside it. A run is *loaded* when its slowest session got under 95% of the source "
        "rate."
    )
    table(error_rows(test, calibrated), key="validate_errors")
    stats = accuracy(test, calibrated)
    if any(s.runs for s in stats):
        st.markdown("**Accuracy over the loaded runs**")
        table(accuracy_rows(stats), key="validate_accuracy")
    if test.caps:
        st.markdown("**Seat caps measured on the worker against predicted**")
        table([c.as_dict() for c in test.caps], key="validate_caps")
    st.subheader("Calibration")
    if test.calibration is not None:
        st.markdown(md(test.calibration.description))
    else:
        st.caption("This load test has no calibration (a summary import holds no batches).")
    found = calibrations(store(), test.curve.id)
    if found:
        st.caption("Every calibration of this curve, newest first (plans pin one by its id):")
        table(calibration_rows(found), key="validate_calibrations")


def run_here() -> None:
    st.markdown(
        "Runs the reference model on this machine: it measures the batch curve, serves "
        "each session count under each policy for real, simulates the same scenarios and "
        f"stores both. Bounded for this page: up to {max(PAGE_SESSIONS)} sessions, runs of "
        f"at most {PAGE_MAX_DURATION_S:g} s, PyTorch on one thread."
    )
    cols = st.columns(4)
    sessions = cols[0].multiselect(
        "Session counts", PAGE_SESSIONS, default=[1, 2, 3], key="validate_sessions"
    )
    policies = cols[1].multiselect(
        "Policies", PAGE_POLICIES, default=["batch-all", "oldest-first"], key="validate_policies"
    )
    duration = cols[2].slider(
        "Seconds per run", 1.0, PAGE_MAX_DURATION_S, 2.0, 0.5, key="validate_duration"
    )
    resolution = cols[3].selectbox("Input", PAGE_RESOLUTIONS, index=1, key="validate_resolution")
    camera = st.checkbox(
        "Real CPU work: a 640x360 camera frame resized per frame, arg-max after (one thread)",
        key="validate_camera",
    )
    if not sessions or not policies:
        st.info("Choose at least one session count and one policy.")
        return
    options = LoadTestOptions(
        sessions=tuple(sessions),
        policies=tuple(policies),
        duration_s=float(duration),
        camera="640x360" if camera else None,
        threads=1,
        measure=MeasureOptions(
            resolution=resolution, device="cpu", warmup=3, rounds=2, repetitions=5
        ),
    )
    if not st.button(
        "Run load test", key="validate_run", type="primary", icon=":material/play_arrow:"
    ):
        return
    bar = st.progress(0.0, text="Loading PyTorch and building the model…")

    def progress(event: LoadTestProgress) -> None:
        # Updating the bar is where Streamlit stops work nobody waits for any more.
        bar.progress(min(max(event.fraction, 0.0), 1.0), text=event.message)

    try:
        with cache.working("Load test") as account:
            test = run_loadtest(options, progress=progress, hold=account.turn)
    except PlannerError as exc:
        show_problems("The load test did not run:", exc.problems)
        return
    if not test.runs:
        st.warning("The load test stopped before any run finished; nothing was stored.")
        return
    db = store()
    db.add_curves([test.curve])
    saved = save_loadtest(db, test)
    flash("success", f"Ran and stored load test {saved.id} ({len(saved.runs)} runs).")
    st.session_state["validate_loadtest"] = saved.id
    st.rerun()


def elsewhere() -> None:
    st.info(
        "**PyTorch is not installed here**, so this server cannot run the reference worker. "
        "Run a load test on the machine that has the device and import what it writes, or "
        "look at the load tests already stored.",
        icon=":material/info:",
    )
    example = LoadTestOptions(
        sessions=(1, 2, 3, 4), policies=("batch-all", "oldest-first"), duration_s=10.0
    )
    st.code(shlex.join(command_for(example)), language="bash")
    st.markdown(
        "It stores the load test in that machine's store; `planner loadtest show ID --out "
        "frames.csv` writes its records. To bring another worker's results here: "
        "`planner loadtest import FILE --curve ID --sessions N --policy P --fps F "
        "--duration-s S` (per-frame records or per-session summaries), or a folder written "
        "by `scripts/accuracy_gpu.py`."
    )


def import_here() -> None:
    """Upload a load test another worker ran: its records or summaries, or a bundle."""
    st.markdown(
        "Bring a load test run elsewhere: a reference worker's **bundle** (its "
        f"`{MANIFEST}` and `{FRAMES}` together, as `scripts/accuracy_gpu.py` writes them), "
        "or one CSV from any worker: **per-frame records** (`session, capture_ms, done_ms, "
        "status`) or **per-session summaries** (`session` and any of `fps, p50_ms, p99_ms, "
        "overwritten`). A bundle carries its scenario; a CSV needs the scenario it ran "
        "below. The planner predicts the same scenario and stores both, as "
        "`planner loadtest import` does."
    )
    files = st.file_uploader(
        "Load test files",
        accept_multiple_files=True,
        type=["csv", "json"],
        key="validate_upload",
        help=f"A bundle's {MANIFEST} and {FRAMES}, or one CSV.",
    )
    chosen = [(f.name, f.getvalue()) for f in files or []]
    names = {name for name, _ in chosen}
    bundle = bool(names & {MANIFEST, FRAMES})
    db = store()
    scenario = curve = None
    seeds = 8
    if chosen and not bundle:
        st.markdown("**The scenario the file's run served**")
        stored = db.curves()
        if not stored:
            st.info("Store the run's curve first (Batch curves, Upload), then import here.")
            return
        by_id = {c.id: c for c in stored}
        cols = st.columns(3)
        chosen_curve = cols[0].selectbox(
            "Curve", list(by_id), key="validate_upload_curve",
            format_func=lambda i: f"{by_id[i].label} ({i})",
        )  # fmt: skip
        sessions = cols[1].number_input(
            "Sessions", int(limits.SESSIONS.low), int(limits.SESSIONS.high), 4,
            key="validate_upload_sessions",
        )  # fmt: skip
        policy = cols[2].selectbox("Policy", list(POLICIES), key="validate_upload_policy")
        cols = st.columns(3)
        fps = cols[0].number_input(
            "Frames per second per session", 1.0, float(limits.FPS.high), 30.0,
            key="validate_upload_fps",
        )  # fmt: skip
        duration = cols[1].number_input(
            "Seconds the run lasted", 1.0, float(limits.DURATION_S.high), 30.0,
            key="validate_upload_duration",
        )  # fmt: skip
        draws = cols[2].number_input(
            "Phase draws to predict over", 1, 16, 8, key="validate_upload_seeds",
            help="The file does not say when each session started; the prediction pools "
            "this many draws of the phases.",
        )  # fmt: skip
        seeds = int(draws)
        curve = by_id[chosen_curve]
        try:
            scenario = import_scenario(curve, int(sessions), policy, fps, duration)
        except PlannerError as exc:
            show_problems("The scenario is not valid; nothing was stored:", exc.problems)
            return
    if not chosen:
        st.info("Choose a load test's files to import them.")
        return
    if not st.button(
        "Import and compare", key="validate_import", type="primary", icon=":material/upload:"
    ):
        return
    try:
        with cache.working("Predicting the imported runs") as account:
            test = import_upload(chosen, scenario, curve, seeds, account)
    except PlannerError as exc:
        show_problems("The load test was not imported; nothing was stored:", exc.problems)
        return
    db.add_curves([test.curve])
    saved = save_loadtest(db, test)
    flash("success", f"Imported and stored load test {saved.id} ({len(saved.runs)} runs).")
    st.session_state["validate_loadtest"] = saved.id
    st.rerun()


show_flash()
st.title("Validate the planner against a real worker")
st.caption(
    "A load test serves sessions for real on a device with the reference worker and "
    "compares what it measured with what the simulator predicts for the same scenarios."
)
db = store()
stored = loadtests(db)
tab_show, tab_run, tab_import = st.tabs(
    ["Stored load tests", "Run a load test", "Import a load test"]
)
with tab_show:
    if not stored:
        st.info(
            "No load test is stored yet. Run one in the next tab, import one another "
            "worker ran, or run `planner loadtest` on the machine that has the device."
        )
    else:
        ids = [row["id"] for row in stored]
        if st.session_state.get("validate_loadtest") not in ids:
            st.session_state["validate_loadtest"] = ids[0]
        names = {row["id"]: label(row) for row in stored}
        chosen = st.selectbox(
            "Load test", ids, key="validate_loadtest", format_func=lambda i: names[i]
        )
        try:
            show(load_loadtest(db, int(chosen)))
        except PlannerError as exc:
            show_problems("This load test cannot be shown:", exc.problems)
with tab_run:
    if validate_charts.torch_available():
        run_here()
    else:
        elsewhere()
with tab_import:
    import_here()
