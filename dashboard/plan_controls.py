"""The Plan page's sidebar: every parameter of a plan, gathered into ``PlanParams``.

``controls`` draws the widgets (what to plan, the criteria, how the card is scheduled and
shared, the worker, fleet and cost, the simulation effort) and hands back the plan they
make, or None with the problems shown. The page loads a link into the same widgets by the
names listed here.
"""

from __future__ import annotations

from typing import Any

import streamlit as st

from dashboard.controls import Controls, chosen_card, pick_curve, queue_controls
from dashboard.ui import show_problems
from dashboard.worker_controls import chain_controls, decoder_controls, workload_controls
from planner import display, limits
from planner.curves.cards import Card
from planner.curves.curve import Curve
from planner.errors import BadInput, NotFound
from planner.plan.cotenants import WORKLOAD_FIELDS
from planner.plan.params import PlanParams
from planner.plan.resolve import modes_of
from planner.text import md
from planner.views.choices import (
    ALL_PROFILES,
    POLICIES,
    offered_modes,
    parameters_of,
    several_per_card,
)

CRITERIA = ("budget_ms", "percentile", "min_fps", "source_fps", "overhead_ms", "max_overwritten")
EFFORT = ("seeds", "duration_s", "max_sessions", "search")
FLEET = ("peak_sessions", "headroom", "price_per_hour", "other_jobs")
WORKER = ("network_ms", "pre_ms", "post_ms", "cpu_workers")
MODE_MEMORY = ("cotenant_memory_mb", "mps_memory_mb")


def controls(c: Controls, db: Any, default: Curve, curves: list[Curve]) -> PlanParams | None:
    """The sidebar: every parameter of the plan. None (with the problems shown) when the
    values do not make a plan."""
    bar = st.sidebar
    bar.markdown("### What to plan")
    chosen = pick_curve(c, bar, offered_curves(c, curves), default.id)
    if any(x.flag for x in curves):
        c.check(
            bar,
            "flagged",
            "Offer flagged curves",
            help="Curves whose measurement failed its drift check (the device was busy or "
            "its clocks changed) are left out of the choices unless you include them.",
        )
    card = chosen_card(db, chosen, default)

    bar.markdown("**What every seat must get**")
    left, right = bar.columns(2)
    c.number(
        left,
        "budget_ms",
        "Latency budget (ms)",
        step=5.0,
        help="End-to-end latency (GPU plus the per-frame overhead) at the percentile.",
    )
    c.number(
        right,
        "percentile",
        "Percentile",
        step=0.5,
        help="The budget applies to this percentile of all delivered frames.",
    )
    left, right = bar.columns(2)
    c.number(
        left,
        "min_fps",
        "Frame-rate floor (fps)",
        step=0.5,
        help="The slowest session must get at least this many frames per second. A "
        "session's delivered frame rate is its source rate times the share of its frames "
        "delivered; frames still in flight when a run ends do not count against it, so a "
        "floor equal to the source rate means every frame, no drops.",
    )
    c.number(
        right,
        "overhead_ms",
        "Overhead per frame (ms)",
        step=1.0,
        help="Network, decode and post-processing outside the GPU.",
    )
    c.number(
        bar,
        "source_fps",
        "Source frame rate (fps)",
        step=1.0,
        help="Frames per second every source (camera) sends.",
    )
    c.number(
        bar,
        "max_overwritten",
        "Most frames overwritten (fraction)",
        step=0.01,
        placeholder="no limit",
        help="Optional: the largest fraction of frames replaced by a newer one "
        "before they ran, e.g. 0.05.",
    )

    bar.markdown("**How the card is scheduled and shared**")
    c.multi(
        bar,
        "policies",
        "Scheduling policies",
        list(POLICIES),
        help="\n".join(f"- **{n}**: {p.summary}" for n, p in POLICIES.items()),
    )
    batcher_fields = batcher_controls(c, bar, batcher_defaults(db, chosen, default))
    offered = offered_modes(card)
    if c.get("modes"):
        st.session_state[c.key("modes")] = [m for m in c.get("modes") if m in offered]
    modes = c.multi(
        bar,
        "modes",
        "Sharing modes",
        offered,
        help="Each mode is planned separately; its seat cap is shown with its isolation.",
    )
    if card is None or not card.mig:
        name = "this curve's card" if card is None else f"{card.name}"
        bar.caption(
            f"MIG needs a card that supports it (A30, A100, H100, H200); {md(name)} does not."
        )
    mode_fields: list[str] = []
    asked = parameters_of(modes)  # each mode's parameters, drawn once
    if "cotenants" in asked:
        c.default("cotenants", (0.9, 0.9))
        left, right = bar.columns(2)
        c.text(
            left,
            "cotenants",
            "Co-tenants (duty cycles)",
            placeholder="e.g. 0.9,0.9",
            help="Other jobs on the card, each the fraction of time it is busy (0-1).",
        )
        c.default("busy_period_ms", 50.0)
        c.number(
            right,
            "busy_period_ms",
            "Busy period (ms)",
            step=10.0,
            help="Mean length of a co-tenant's busy period.",
        )
        c.text(
            bar,
            "cotenant_memory_mb",
            "Co-tenants' GPU memory (MB)",
            placeholder="not declared",
            help="GPU memory each co-tenant holds: one value for all, or one per co-tenant. "
            "Time-slicing has no memory isolation, so ours is the card's memory less theirs.",
        )
        mode_fields += ["cotenants", "busy_period_ms", "cotenant_memory_mb"]
        mode_fields += workload_controls(c, bar, db, curves)
    if "mps_share" in asked:
        c.default("mps_share", 50.0)
        c.number(
            bar,
            "mps_share",
            "MPS compute share (%)",
            step=5.0,
            placeholder="50",
            help="Our share of the card's compute (active thread percentage).",
        )
        c.number(
            bar,
            "mps_memory_mb",
            "MPS memory limit (MB)",
            step=256.0,
            placeholder="no limit",
            help="Our client's GPU memory limit, if one is set; else the card's memory.",
        )
        mode_fields += ["mps_share", "mps_memory_mb"]
    if "mig_profile" in asked and card is not None and card.mig:
        profiles = [p.name for p in card.mig_profiles] + [ALL_PROFILES]
        if c.get("mig_profile") not in profiles:
            st.session_state[c.key("mig_profile")] = profiles[0]
        c.select(
            bar,
            "mig_profile",
            "MIG profile",
            profiles,
            format_func=lambda p: _profile_label(card, p),
            help="Each profile is planned on its own; all profiles of this card plans "
            "every one at once and compares them in one table and on the chart of seats "
            "against latency.",
        )
        mode_fields.append("mig_profile")

    bar.markdown("**The worker**")
    left, right = bar.columns(2)
    c.number(
        left,
        "network_ms",
        "Network, each way (ms)",
        step=1.0,
        help="Camera to worker; a frame crosses it twice (there and back).",
    )
    c.number(
        right,
        "cpu_workers",
        "CPU threads",
        help="Threads that pre- and post-process frames (and decode them where no video "
        "decoder does), from one queue. 0 = unlimited: "
        "the CPU stages only delay frames.",
    )
    left, right = bar.columns(2)
    c.number(
        left,
        "pre_ms",
        "Pre-process (ms)",
        step=1.0,
        help="CPU work per frame before the GPU: decode, resize, normalise. Decoding on "
        "the card's video decoders is set under Video decoders below; this is then the "
        "CPU's work after it.",
    )
    c.number(
        right,
        "post_ms",
        "Post-process (ms)",
        step=1.0,
        help="CPU work per frame after the GPU.",
    )
    queue_fields = chain_controls(c, bar, curves) + decoder_controls(c, bar)
    queue_fields += queue_controls(c, bar)

    bar.markdown("**Fleet and cost**")
    left, right = bar.columns(2)
    c.number(
        left,
        "peak_sessions",
        "Peak sessions",
        placeholder="not set",
        help="Concurrent sessions at peak, for the number of GPUs.",
    )
    c.number(
        right,
        "headroom",
        "Headroom (0.2 = 20%)",
        step=0.05,
        fmt="%.2f",
        help="Spare capacity on top of the peak.",
    )
    stored = card.price_per_hour if card is not None else None
    c.number(
        bar,
        "price_per_hour",
        "Card price (USD per hour)",
        step=0.1,
        fmt="%.2f",
        placeholder="stored price" if stored is not None else "not set",
        help="Leave empty to use the card's stored price (set on Compare cards).",
    )
    if stored is not None and c.get("price_per_hour") is None:
        bar.caption(f"Using the stored price of {md(card.name)}: {display.money(stored)} per hour.")  # type: ignore[union-attr]
    if several_per_card(modes):
        c.check(
            bar,
            "other_jobs",
            "The rest of the card runs other jobs",
            help="By default a MIG or MPS card is filled with instances of this worker, and "
            "seats per card count them all. Tick this when the card's other instances run "
            "other jobs: a card then counts one instance, and a seat costs our fraction of "
            "the card.",
        )
    else:
        st.session_state.pop(c.key("other_jobs"), None)

    effort = bar.expander("Simulation effort")
    c.number(
        effort,
        "seeds",
        "Random phase draws per count",
        help="Each session count is simulated with this many random arrival "
        "phases; the percentile pools them all.",
    )
    c.number(effort, "duration_s", "Simulated seconds per draw", step=5.0)
    c.number(
        effort,
        "max_sessions",
        "Largest session count considered",
        placeholder=f"until the first failure, up to {int(limits.MAX_SESSIONS.high):,}",
    )
    c.select(
        effort,
        "search",
        "Cap search",
        limits.SEARCHES,
        help="Bracketed (the default) finds the first failing count by doubling and "
        "bisection and establishes the counts below it with one-seed probes where they "
        "leave room; exhaustive simulates every count from 1 in full. They agree except in "
        "the case docs/design.md states.",
    )

    names = [*CRITERIA, "policies", *batcher_fields, *mode_fields, *WORKER, *queue_fields,
             *FLEET, *EFFORT, "flagged"]  # fmt: skip
    values, problems = c.values(names)
    values["flagged"] = bool(values.get("flagged"))  # only asked when a curve is flagged
    selected = tuple(modes)
    defaults = {
        "cotenants": (),
        "mps_share": None,
        "mig_profile": None,
        "cotenant_memory_mb": (),
        "mps_memory_mb": None,
        "cotenant_curve": (),
        "cotenant_batch": (),
        "cotenant_rps": (),
    }
    values = {**defaults, **values}
    values["other_jobs"] = bool(values.get("other_jobs"))  # only asked with MIG or MPS
    if not selected:
        problems.append("Sharing modes: pick at least one")
    triggers = ("cotenants", "mps_share", "mig_profile", "mps_memory_mb", *WORKLOAD_FIELDS)
    derived = modes_of(PlanParams(**{k: values[k] for k in triggers}))
    values["modes"] = None if selected == derived else selected
    if problems:
        show_problems("These settings do not make a plan:", problems)
        return None
    try:
        return PlanParams(**chosen, **values)
    except BadInput as exc:
        show_problems("These settings do not make a plan:", c.explain(exc.problems))
        return None


BATCHER_LABELS = {"max_batch": "Largest batch B", "max_queue_delay_us": "Queue delay D (µs)"}
"""The batcher settings' labels, as on the Simulate page."""


def batcher_controls(c: Controls, bar: Any, server: dict[str, float]) -> list[str]:
    """The batcher settings of the chosen policies that take them (max-batch, triton),
    empty for their default: the server's the curve was measured on (``server``), else
    each policy's own; the names of the parameters shown."""
    chosen = [POLICIES[p] for p in c.get("policies") or () if p in POLICIES]
    shown = []
    for name, label in BATCHER_LABELS.items():
        defaults = {p.defaults[name] for p in chosen if name in p.params}
        if not defaults:
            continue
        if name in server:
            default = f"the server's, {server[name]:g}"
        else:
            default = f"{next(iter(defaults)):g}" if len(defaults) == 1 else "each policy's own"
        c.number(
            bar,
            name,
            label,
            step=1.0 if name == "max_batch" else 500.0,
            placeholder=f"default ({default})",
            help="Triton's max_batch_size and dynamic_batching max_queue_delay_microseconds "
            "(the largest batch is max-batch's B too); empty: the settings of the server the "
            "curve was measured on, else the policy's own.",
        )
        shown.append(name)
    return shown


def batcher_defaults(db: Any, chosen: dict[str, Any], default: Curve) -> dict[str, float]:
    """The batcher settings of the server the chosen curve was measured on (empty for a
    curve measured elsewhere, or embedded in a link)."""
    if chosen.get("points") is not None:
        return {}
    try:
        return (db.curve(chosen["curve"]) if chosen.get("curve") else default).batcher
    except (NotFound, BadInput):
        return {}


def offered_curves(c: Controls, everything: list[Curve]) -> list[Curve]:
    """The curves the picker offers: flagged ones only when the user includes them, or
    when the plan already runs on one (a link to it)."""
    include = bool(c.get("flagged"))
    current = c.get("curve")
    return [x for x in everything if include or not x.flag or x.id == current]


def _profile_label(card: Card, name: str) -> str:
    """``1g.10gb (1 of 7 slices, up to 7 per card)``, or every profile at once."""
    if name == ALL_PROFILES:
        return "all profiles of this card"
    profile = card.profile(name)
    fits = "" if profile.max_instances is None else f", up to {profile.max_instances} per card"
    return f"{name} ({profile.slices} of {card.mig_slices} slices{fits})"
