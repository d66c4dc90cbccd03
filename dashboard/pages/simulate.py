"""Simulate: one scenario in detail, optionally two policies side by side on it."""

from __future__ import annotations

from typing import Any

import streamlit as st

from dashboard import cache, calibration_control, url_state, worker_controls
from dashboard.controls import (
    QUEUE_FIELDS,
    Controls,
    chosen_card,
    load_curve,
    pick_curve,
    queue_controls,
)
from dashboard.run_charts import (
    TIMELINE_FRAMES,
    TIMELINE_SESSIONS,
    fps_figure,
    latency_histogram,
    timeline_figure,
    timeline_window,
)
from dashboard.state import store
from dashboard.tables import run_rows, session_rows
from dashboard.ui import (
    default_curve_or_stop,
    show_over_budget,
    show_problems,
    static_table,
    table,
)
from planner import display
from planner.curves.fit import FittedCurve
from planner.errors import BadInput, NotFound
from planner.plan.params import SimulateParams
from planner.plan.resolve import command_line, simulation_inputs
from planner.text import md
from planner.views.choices import PHASES, POLICIES, offered_modes, parameters_of
from planner.views.runs import Results
from planner.views.simulation import simulation_view
from planner.views.work import OverBudget

c = Controls("sim_")
POLICY_FIELDS = ("max_batch", "max_queue_delay_us", "slo_ms")
RUN_FIELDS = (
    "sessions",
    "policy",
    "compare_policy",
    "fps",
    "duration_s",
    "phases",
    "seed",
    "jitter_ms",
    "overhead_ms",
    "mode",
    "busy_period_ms",
    "network_ms",
    "pre_ms",
    "post_ms",
    "cpu_workers",
)
MODE_MEMORY = ("cotenant_memory_mb", "mps_memory_mb")
CRITERIA = ("budget_ms", "percentile", "min_fps")
CALIBRATION_KEY = "sim_calibration"


def controls() -> SimulateParams | None:
    bar = st.sidebar
    bar.markdown("### The scenario")
    chosen = pick_curve(c, bar, curves, default.id)
    card = chosen_card(db, chosen, default)
    left, right = bar.columns(2)
    c.number(left, "sessions", "Sessions", help="Camera sessions sharing the card.")
    c.text(
        right,
        "fps",
        "Frames/s",
        placeholder="30 or 30,30,15",
        help="Frames per second each session sends: one value for all, or one per session.",
    )
    c.select(
        bar,
        "policy",
        "Policy",
        list(POLICIES),
        help="\n".join(f"- **{n}**: {p.summary}" for n, p in POLICIES.items()),
    )
    c.select(
        bar,
        "compare_policy",
        "Side by side with",
        list(POLICIES),
        optional=True,
        placeholder="no second policy",
        help="Run the same scenario (same arrivals) under a second policy.",
    )
    used = {
        p
        for name in (c.get("policy"), c.get("compare_policy"))
        if name in POLICIES
        for p in POLICIES[name].params
    }
    chosen_policies = [n for n in (c.get("policy"), c.get("compare_policy")) if n in POLICIES]
    labels = {
        "max_batch": "Largest batch B",
        "max_queue_delay_us": "Queue delay D (µs)",
        "slo_ms": "Objective (ms, GPU side)",
    }
    steps = {"max_batch": 1.0, "max_queue_delay_us": 500.0, "slo_ms": 5.0}
    for name in POLICY_FIELDS:
        if name in used:
            defaults = {
                POLICIES[p].defaults[name] for p in chosen_policies if name in POLICIES[p].defaults
            }
            shown = f"{next(iter(defaults)):g}" if len(defaults) == 1 else "each policy's own"
            c.number(bar, name, labels[name], step=steps[name], placeholder=f"default ({shown})")
    arrivals = bar.expander("Arrivals and overhead")
    left, right = arrivals.columns(2)
    c.number(left, "duration_s", "Seconds", step=5.0)
    c.number(right, "seed", "Seed")
    c.select(
        arrivals,
        "phases",
        "Phases",
        list(PHASES),
        help="random: each session starts at a random point of its frame period; even: "
        "spread evenly; aligned: all at once (worst-case bursts).",
    )
    left, right = arrivals.columns(2)
    c.number(left, "jitter_ms", "Jitter (ms)", help="Standard deviation of arrival jitter.")
    c.number(
        right,
        "overhead_ms",
        "Overhead (ms)",
        help="Per-frame time outside the GPU (network, decode, post-processing).",
    )

    worker = bar.expander("The worker (network, CPU stages)")
    left, right = worker.columns(2)
    c.number(left, "network_ms", "Network, each way (ms)", step=1.0)
    c.number(
        right,
        "cpu_workers",
        "CPU threads",
        help="Threads for the pre and post work, from one queue; 0 = unlimited.",
    )
    left, right = worker.columns(2)
    c.number(left, "pre_ms", "Pre-process (ms)", step=1.0, help="CPU work before the GPU.")
    c.number(right, "post_ms", "Post-process (ms)", step=1.0, help="CPU work after the GPU.")
    queue_fields = queue_controls(c, worker)
    queue_fields += worker_controls.decoder_controls(c, worker)
    queue_fields += worker_controls.chain_controls(c, bar, curves)

    offered = offered_modes(card)
    if c.get("mode") not in offered:
        st.session_state[c.key("mode")] = "exclusive"
    mode = c.select(bar, "mode", "Sharing mode", offered)
    mode_fields: list[str] = []
    asked = parameters_of([mode])
    if "cotenants" in asked:
        c.default("cotenants", (0.9, 0.9))
        left, right = bar.columns(2)
        c.text(left, "cotenants", "Co-tenants (duty cycles)", placeholder="e.g. 0.9,0.9")
        c.number(right, "busy_period_ms", "Busy period (ms)", step=10.0)
        c.text(
            bar,
            "cotenant_memory_mb",
            "Co-tenants' GPU memory (MB)",
            placeholder="not declared",
            help="One value for all co-tenants, or one per co-tenant.",
        )
        mode_fields += ["cotenants", "busy_period_ms", "cotenant_memory_mb"]
        mode_fields += worker_controls.workload_controls(c, bar, db, curves)
        kept: dict[str, Any] = {}
    else:
        kept = worker_controls.held_workloads(c)
        if any(kept.values()):
            bar.caption("The co-tenants by what they run apply under time-slicing.")
    if "mps_share" in asked:
        c.default("mps_share", 50.0)
        c.number(bar, "mps_share", "MPS compute share (%)", step=5.0, placeholder="50")
        c.number(bar, "mps_memory_mb", "MPS memory limit (MB)", step=256.0, placeholder="no limit")
        mode_fields += ["mps_share", "mps_memory_mb"]
    if "mig_profile" in asked and card is not None:
        profiles = [p.name for p in card.mig_profiles]
        if c.get("mig_profile") not in profiles:
            st.session_state[c.key("mig_profile")] = profiles[0]
        c.select(bar, "mig_profile", "MIG profile", profiles)
        mode_fields.append("mig_profile")

    judged = bar.expander("Criteria to judge the run by")
    judged.caption("A plan's criteria, drawn on the charts; they change nothing simulated.")
    left, right = judged.columns(2)
    c.number(left, "budget_ms", "Latency budget (ms)", step=5.0)
    c.number(right, "percentile", "Percentile", step=0.5)
    c.number(judged, "min_fps", "Frame-rate floor (fps)", step=0.5)

    names = [*RUN_FIELDS, *(n for n in POLICY_FIELDS if n in used), *mode_fields, *CRITERIA,
             *queue_fields]  # fmt: skip
    values, problems = c.values([n for n in names if n in c.labels])
    if problems:
        show_problems("These settings do not make a scenario:", problems)
        return None
    try:
        return SimulateParams(**chosen, **values, **kept)
    except BadInput as exc:
        show_problems("These settings do not make a scenario:", c.explain(exc.problems))
        return None


def run_view(
    results: Results, index: int, wide: bool, params: SimulateParams, fitted: FittedCurve
) -> None:
    s = results.scenario
    first_model = inputs.curve.model
    view = simulation_view(results, fitted, min_fps=params.min_fps, first_model=first_model)
    cells = st.columns(3)
    below = results.min_fps < params.min_fps
    slowest, *others = view.figures
    cells[0].metric(
        slowest.label,
        slowest.value,
        delta="below the floor" if below else "meets the floor",
        help=slowest.help,
        delta_color="inverse" if below else "normal",
        delta_arrow="off",
    )
    for cell, figure in zip(cells[1:], others, strict=True):
        cell.metric(figure.label, figure.value)
    if view.cpu_figures:
        for cell, figure in zip(st.columns(3), view.cpu_figures, strict=False):
            cell.metric(figure.label, figure.value)
    if s.memory_batch_limit is not None:
        st.caption(f"GPU memory holds batches of at most {s.memory_batch_limit} frames.")
    arrived = sum(x.arrived for x in results.sessions)
    overwritten = sum(x.overwritten for x in results.sessions)
    expired = sum(x.expired for x in results.sessions)
    growth = results.queue
    if growth is None:
        fate = (
            f"**{overwritten:,}** were overwritten by a newer frame of the same session "
            f"({display.fraction(results.overwritten_fraction)}) and **{expired:,}** expired "
            f"({display.fraction(results.expired_fraction)})."
        )
    else:
        first, last = growth.p99_first_third_ms, growth.p99_last_third_ms
        verdict = "**The queue grows**" if growth.grows else "The queue keeps up"
        thirds = (
            f": p99 {display.ms(first)} in the first third of the run, {display.ms(last)} "
            "in the last."
            if first is not None and last is not None
            else "."
        )
        fate = (
            f"the server queued every one: **{expired:,}** were rejected or timed out "
            f"({display.fraction(results.expired_fraction)}) and **{growth.queued_at_end:,}** "
            f"were still queued at the end. {verdict}{thirds}"
        )
    st.markdown(
        f"Of **{arrived:,}** frames sent, {fate}"
        + (
            f" **Starved:** session {', '.join(map(str, results.starved_sessions))}."
            if results.starved_sessions
            else ""
        )
    )
    for note in view.notes:
        st.warning(md(note), icon=":material/warning:")
    st.plotly_chart(
        timeline_figure(results, first_model=first_model),
        width="stretch",
        key=f"sim_chart_timeline_{index}",
    )
    if view.models:
        st.caption(
            "Each batch on the GPU lane is split by model of the chain, in the order they "
            "run; the batch is answered when the last one finishes."
        )
        static_table(
            [
                {
                    "Model": m.model,
                    "Mean per batch": display.ms(m.mean_ms),
                    "p99 per batch": display.ms(m.p99_ms),
                    "Longest": display.ms(m.max_ms),
                    "Share of the GPU's time": display.fraction(m.share),
                }
                for m in view.models
            ],
            key=f"sim_models_{index}",
        )
    drawn = timeline_window(results)
    if drawn.sampled:
        which = (
            f"the first {drawn.sessions} of its {drawn.of_sessions} sessions"
            if drawn.sessions < drawn.of_sessions
            else f"its {drawn.sessions} sessions"
        )
        st.caption(
            f"The timeline draws {which} over the first {display.ms(drawn.horizon_ms)}: at most "
            f"{TIMELINE_SESSIONS} sessions and {TIMELINE_FRAMES:,} frames. Every other figure "
            "on this page counts every frame of the run."
        )
    parts = st.columns(2) if wide else [st.container(), st.container()]
    parts[0].plotly_chart(
        fps_figure(results, floor=params.min_fps), width="stretch", key=f"sim_chart_fps_{index}"
    )
    parts[1].plotly_chart(
        latency_histogram(results, budget_ms=params.budget_ms, percentile=params.percentile),
        width="stretch",
        key=f"sim_chart_latency_{index}",
    )
    with st.expander("Every session"):
        table(session_rows(results), key=f"sim_sessions_{index}")


# ---------------------------------------------------------------------------------------

db = store()
default = default_curve_or_stop(db, "Simulate", "to simulate")
curves = db.curves()
link = url_state.opened(
    SimulateParams,
    check=calibration_control.check(db, url_state.curve_check(db, simulation_inputs, "scenario")),
)
if link is not None:
    load_curve(c, link.params, default.id)
    c.load(link.params, [*RUN_FIELDS, *POLICY_FIELDS, *CRITERIA, *QUEUE_FIELDS])
    for name in ("cotenants", "mps_share", "mig_profile", *MODE_MEMORY):
        if getattr(link.params, name):
            c.load(link.params, [name])
        else:
            st.session_state.pop(c.key(name), None)
    url_state.show_ignored(link.ignored)
    calibration_control.load(link.params, CALIBRATION_KEY)
    worker_controls.opened(c, link.params)

st.title("Simulate one scenario")
params = controls()
if params is None:
    st.stop()
params = calibration_control.choose(params, db, CALIBRATION_KEY)
url_state.publish(params)
try:
    inputs = simulation_inputs(params, db)
except (BadInput, NotFound) as exc:
    show_problems("This scenario cannot be simulated:", exc.problems)
    st.stop()

scenario = inputs.scenario
rates = ", ".join(display.fps(f, unit=False) for f in sorted(set(scenario.fps)))
st.caption(
    f"{scenario.sessions} sessions at {rates} fps on "
    f"{md(inputs.curve.label)}, {scenario.sharing.label}, {scenario.duration_s:g} s, "
    f"{scenario.phases} phases, seed {scenario.seed}. "
    + (
        "The server queues every frame, as Triton and KServe do: none replaces another."
        if scenario.queue == "all"
        else "Each session keeps only its newest frame: one that arrives while an older "
        "frame of the same session still waits replaces it."
    )
)
calibration_control.note(inputs)
if inputs.curve.flag:
    st.warning(
        f"**This curve is flagged: {md(inputs.curve.flag)}.** Its points may not be what the "
        "card does on an idle device.",
        icon=":material/warning:",
    )
runs = [scenario] if inputs.compare is None else [scenario, inputs.compare]
try:
    with st.spinner("Simulating…"), cache.working("Simulating") as account:
        results = [cache.simulation(s, account) for s in runs]
except OverBudget as exc:
    show_over_budget(exc, "simulation", command_line("simulate", params))
    st.stop()
static_table(run_rows(results), key="sim_summary")
st.caption(
    "Frame rates are delivered frames per second; latency percentiles are end to end "
    "(network, CPU stages, GPU and the per-frame overhead) over every delivered frame; a "
    "session is starved below half the mean frame rate."
)
if len(results) == 1:
    run_view(results[0], 0, wide=True, params=params, fitted=inputs.fitted)
else:
    columns = st.columns(2, gap="large")
    for index, (column, run) in enumerate(zip(columns, results, strict=True)):
        with column:
            st.subheader(run.scenario.policy)
            run_view(run, index, wide=False, params=params, fitted=inputs.fitted)
