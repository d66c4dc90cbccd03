"""Measure: a batch curve measured on this machine, or the command that measures one on
the machine that has the card."""

from __future__ import annotations

import importlib.util
import shlex
from pathlib import Path

import streamlit as st

from dashboard.state import store
from dashboard.tables import curve_name, point_table
from dashboard.ui import flash, show_flash, show_problems, table
from planner.errors import BadInput, PlannerError
from planner.measure.devices import DEVICES, INSTALL_HINT, local_device
from planner.measure.harness import (
    DEFAULT_BATCHES,
    DEFAULT_REPETITIONS,
    DEFAULT_RESOLUTION,
    DEFAULT_ROUNDS,
    DEFAULT_WARMUP,
    MEASURABLE_PRECISIONS,
    MeasureOptions,
    MeasureProgress,
    ModelSpec,
    measure_curves,
    parse_batches,
    parse_input_shape,
)
from planner.measure.options import command_for
from planner.text import md, md_list

AUTO = "auto"
# Small enough to finish in seconds on a laptop CPU; the study's settings are for GPUs.
HERE = {"batches": "1,2,4", "resolution": "128x72", "warmup": 2, "rounds": 2, "repetitions": 5}
THERE = {
    "batches": ",".join(map(str, DEFAULT_BATCHES)),
    "resolution": DEFAULT_RESOLUTION,
    "warmup": DEFAULT_WARMUP,
    "rounds": DEFAULT_ROUNDS,
    "repetitions": DEFAULT_REPETITIONS,
}


def form(prefix: str, defaults: dict[str, object], *, model_file: bool) -> MeasureOptions | None:
    """The measurement's options (keys ``prefix + name``); None with the problems shown."""
    for name, value in defaults.items():
        st.session_state.setdefault(f"{prefix}{name}", value)
    problems: list[str] = []
    path: Path | None = None
    shape = None
    if model_file:
        left, right = st.columns(2)
        file_text = left.text_input(
            "Model file on that machine (optional)",
            key=f"{prefix}model_file",
            placeholder="empty: the reference model",
            help="A TorchScript file or torch.export archive (.pt2). Loading it runs code "
            "from it: measure only files you trust.",
        )
        shape_text = right.text_input(
            "Its input shape C,H,W", key=f"{prefix}input_shape", placeholder="e.g. 9,288,512"
        )
        if file_text.strip():
            path = Path(file_text.strip())
            if not shape_text.strip():
                problems.append("a model file needs its input shape C,H,W")
        if shape_text.strip():
            try:
                shape = parse_input_shape(shape_text)
            except BadInput as exc:
                problems.extend(exc.problems)
    row = st.columns(3)
    batches_text = row[0].text_input(
        "Batch sizes", key=f"{prefix}batches", help="Comma-separated, measured in ascending order."
    )
    precisions = row[1].multiselect(
        "Precisions",
        MEASURABLE_PRECISIONS,
        key=f"{prefix}precisions",
        placeholder="FP16 on a GPU, FP32 on the CPU",
        help="One curve per precision.",
    )
    resolution = row[2].text_input(
        "Input resolution",
        key=f"{prefix}resolution",
        help="WIDTHxHEIGHT of the reference model's input (a model file's comes from its "
        "input shape).",
        disabled=path is not None,
    )
    row4 = st.columns(4)
    device = row4[0].selectbox(
        "Device",
        [AUTO, *DEVICES],
        key=f"{prefix}device",
        format_func=lambda d: "CUDA if present, else CPU" if d == AUTO else d,
    )
    warmup = row4[1].number_input("Warm-up calls", 0, 10_000, key=f"{prefix}warmup")
    rounds = row4[2].number_input("Rounds", 1, 1_000, key=f"{prefix}rounds")
    repetitions = row4[3].number_input("Calls per round", 1, 100_000, key=f"{prefix}repetitions")
    row = st.columns(3)
    model_name = row[0].text_input(
        "Store as model", key=f"{prefix}model_name", placeholder="ball-detector"
    )
    card = row[1].text_input(
        "Store as card", key=f"{prefix}card", placeholder="named after the device"
    )
    mig = row[2].text_input("MIG profile", key=f"{prefix}mig_profile", placeholder="none")
    channels_last = st.checkbox(
        "Channels-last memory layout",
        key=f"{prefix}channels_last",
        help="Often faster with FP16 on tensor-core GPUs.",
    )
    try:
        batches = parse_batches(batches_text)
    except BadInput as exc:
        problems.extend(exc.problems)
        batches = DEFAULT_BATCHES
    if problems:
        show_problems("These options cannot be measured:", problems)
        return None
    try:
        return MeasureOptions(
            model=ModelSpec(path=path, input_shape=shape),
            batches=batches,
            precisions=tuple(precisions),
            resolution=None if path is not None else resolution,
            device=None if device == AUTO else device,
            warmup=int(warmup),
            rounds=int(rounds),
            repetitions=int(repetitions),
            channels_last=channels_last,
            model_name=model_name or None,
            card=card or None,
            mig_profile=mig or None,
        )
    except BadInput as exc:
        show_problems("These options cannot be measured:", exc.problems)
        return None


def here() -> None:
    if importlib.util.find_spec("torch") is None:
        st.warning(
            "**PyTorch is not installed in the dashboard's environment.** To measure here, "
            f"{md(INSTALL_HINT)}: in this checkout, `pip install -e '.[measure]'`. Or build the "
            "command for the card's machine in the other tab.",
            icon=":material/info:",
        )
        return
    st.markdown(
        "Measures the reference model (an HRNet-style ball detector, random weights) on "
        "this machine and stores the curve. The settings start small so that a run takes "
        "seconds on a CPU; the study measured 512x288 with 10 warm-up calls and 3 rounds of "
        "30 on a GPU."
    )
    options = form("measure_here_", HERE, model_file=False)
    if options is None:
        return
    device_notice(options.device)
    st.caption(
        f"{len(options.batches)} batch sizes x {options.calls_per_point} calls each, "
        "plus a drift check at the end."
    )
    again = remeasure_offer()
    if not (
        st.button(
            "Measure and store", key="measure_run", type="primary", icon=":material/play_arrow:"
        )
        or again
    ):
        return
    bar = st.progress(0.0, text="Loading PyTorch and building the model…")

    def progress(event: MeasureProgress) -> None:
        bar.progress(min(max(event.fraction, 0.0), 1.0), text=event.message)

    try:
        result = measure_curves(options, progress)
    except PlannerError as exc:
        show_problems("Nothing was measured:", exc.problems)
        return
    bar.progress(1.0, text="Done.")
    if not result.curves:
        st.warning("The measurement stopped before any point was measured; nothing was stored.")
        return
    saved = store().add_curves(list(result.curves))
    names = "; ".join(f"{md(c.label)} ({c.id})" for c in saved)
    flash(
        "success",
        f"Measured and stored {len(saved)} curve(s): {names}. They are on the Curves page.",
    )
    if result.warnings:
        flash("warning", "**Warnings from the measurement**\n\n" + md_list(result.warnings))
    if any(c.flag for c in saved):
        flash(
            "error",
            "**A measurement is flagged**: its drift check failed (batch 1 took a different "
            "time at the end than at the start: the device was busy, or its clocks changed). "
            "The curve is stored with the flag, shown wherever it appears, and kept out of "
            "Compare cards and the Plan page's default choices. Measure again on an idle "
            "device.",
        )
    st.session_state["measure_last"] = [c.id for c in saved]
    st.rerun()


def device_notice(requested: str | None) -> None:
    """Say plainly, before anything runs, when there is no GPU to measure here."""
    try:
        found = local_device()
    except BadInput:
        return  # PyTorch is missing: said above
    if requested == "cpu" or (requested is None and found == "cpu"):
        st.warning(
            "**No CUDA GPU here: a CPU measurement plans CPU serving, not a GPU.** To plan a "
            "GPU, run the command from the other tab on the machine that has the card."
            if found == "cpu"
            else "**The CPU is chosen**: a CPU measurement plans CPU serving, not a GPU.",
            icon=":material/memory:",
        )
    elif requested == "cuda" and found != "cuda":
        st.error(
            "**No CUDA GPU here**, so a CUDA measurement cannot run. Run the command from the "
            "other tab on the machine that has the card.",
            icon=":material/memory:",
        )
    else:
        st.caption(f"Measures on this machine's {md(found.upper())} device.")


def remeasure_offer() -> bool:
    """After a flagged measurement: say so and offer to measure again (the same options).
    True when the user asks to."""
    last = st.session_state.get("measure_last") or []
    flagged = []
    for curve_id in last:
        try:
            curve = store().curve(curve_id)
        except PlannerError:
            continue
        if curve.flag:
            flagged.append(curve)
    if not flagged:
        return False
    st.warning(
        "The last measurement is flagged: "
        + "; ".join(f"{md(c.label)}: {md(c.flag)}" for c in flagged)
        + ". Close other work on the device and measure again.",
        icon=":material/warning:",
    )
    return st.button("Measure again", key="measure_again", icon=":material/replay:")


def there() -> None:
    st.markdown(
        "Build the command to run on the machine that has the card, then upload the file it "
        "writes on the Curves page."
    )
    options = form("measure_cmd_", THERE, model_file=True)
    if options is None:
        return
    out = st.text_input("Write to", key="measure_cmd_out", placeholder="new-card.csv")
    with st.container(key="measure_command"):
        st.code(
            shlex.join(command_for(options, out=out.strip() or "new-card.csv")), language="bash"
        )
    st.markdown(
        "On that machine, in a checkout of this repository: install PyTorch for its CUDA "
        "version first (https://pytorch.org/get-started/locally/), then "
        "`pip install -e '.[measure]'`, then run the command. Upload the CSV it writes:"
    )
    st.page_link(
        "dashboard/pages/curves.py",
        label="Upload it on the Curves page",
        icon=":material/upload:",
        query_params={"tab": "Upload"},
    )


show_flash()
st.title("Measure a batch curve")
st.caption(
    "Whether batching pays depends on the card and the input size, so a new card starts "
    "with its batch curve: the latency of one batched call at each batch size."
)
last = st.session_state.get("measure_last")
if last:
    db = store()
    for curve_id in last:
        try:
            curve = db.curve(curve_id)
        except PlannerError:
            continue
        st.markdown(f"**{md(curve_name(curve))}** ({curve.id})")
        table(point_table(curve), key=f"measure_points_{curve.id}", height="content")
        st.page_link(
            "dashboard/pages/curves.py",
            label="Open it on the Curves page",
            icon=":material/show_chart:",
            query_params={"curve": curve.id},
        )
tab_here, tab_there = st.tabs(["Measure on this machine", "Command for the card's machine"])
with tab_here:
    here()
with tab_there:
    there()
