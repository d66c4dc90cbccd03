"""The Curves page's Upload tab: read benchmark files, preview the curves they hold and
save the new ones. Nothing is stored until the person presses Save."""

from __future__ import annotations

from typing import Any

import streamlit as st

from dashboard.charts import latency_figure, per_frame_figure
from dashboard.tables import curve_rows, point_table, preview_labels
from dashboard.ui import flash, set_next_run, show_problems, table
from dashboard.uploads import LABELS, UploadForm, label, needed, preview
from planner.curves.curve import PRECISIONS, Curve
from planner.curves.imports import FORMAT_NAMES, FORMATS, MAX_FILE_BYTES, ImportProblems
from planner.curves.imports.native import template_csv
from planner.errors import BadInput
from planner.store.repository import Store
from planner.text import md, md_list

BROWSE, UPLOAD = "Stored curves", "Upload"
PREVIEW_CURVES = 20  # drawn in the upload preview; a 5 MiB file can hold thousands
MAX_CHOICES = 50  # new curves offered one by one; more are saved together
TABLE_COLUMNS: dict[str, Any] = {
    "id": st.column_config.TextColumn("id", width="medium"),
    "points": st.column_config.NumberColumn("points", format="%d", width="small"),
}


def upload_guide() -> None:
    """What each format needs, before anything is missing, and a template of the planner's
    CSV to fill in."""
    st.markdown(
        "Add curves from benchmark files: the planner's own CSV or JSON, or what a "
        "benchmarking tool wrote. Nothing is stored until you press **Save**, and a file "
        "with a bad row stores nothing."
    )
    with st.expander("What each format needs", expanded=False):
        st.markdown(
            "- **The planner's CSV**: a header row with the required columns `batch` (frames "
            "per call, a whole number from 1) and `latency_ms` (ms per batched call); "
            "optional spread columns `p10_ms`, `p50_ms`, `p90_ms`, `p99_ms`, `std_ms`, `n` "
            "(timed calls) and `memory_mb`; and the metadata columns `model`, `card`, "
            "`precision` (fp32, fp16, bf16, int8), `resolution` (WIDTHxHEIGHT), "
            "`mig_profile` and `notes`. One row per batch size. **Model** and **Card** are "
            "needed from the file's columns or from the fields below.\n"
            "- **JSON**: the same fields, as a list of points or an object with `points`.\n"
            "- **perf_analyzer** (`-f` CSV): the file records neither the model, the card "
            "nor the batch size, so fill in **Model**, **Card** and **Batch size of this "
            "run** (its `-b`; one value per file, in order: 1,2,4).\n"
            "- **Model Analyzer** (`metrics-model-inference.csv`): fill in **Card**; one "
            "curve per model config.\n"
            "- **Nexus** profile: names its model and card itself."
        )
        st.download_button(
            "Download a CSV template",
            data=template_csv(),
            file_name="batch-curve-template.csv",
            mime="text/csv",
            key="upload_template",
            on_click="ignore",
            icon=":material/download:",
        )


def upload_fields(db: Store, needs: dict[str, list[str]]) -> UploadForm:
    """The metadata fields, marked where the chosen files need them."""
    st.markdown("**Metadata** for what the files do not state (leave empty to use the file's)")
    if needs:
        wanted = "; ".join(
            f"{LABELS[field]} for {', '.join(files)}" for field, files in needs.items()
        )
        st.caption(f"\\* needed by the files chosen: {md(wanted)}.")
    row1 = st.columns(3)
    model = row1[0].text_input(
        label("model", needs), key="upload_model", placeholder="e.g. ball-detector"
    )
    override_model = row1[0].checkbox(LABELS["override_model"], key="upload_override_model")
    card = row1[1].selectbox(
        label("card", needs),
        [c.name for c in db.cards()],
        index=None,
        accept_new_options=True,
        placeholder="pick or type a card",
        key="upload_card",
    )
    override_card = row1[1].checkbox(LABELS["override_card"], key="upload_override_card")
    precision = row1[2].selectbox(
        LABELS["precision"], PRECISIONS, index=None, placeholder="as in the file",
        key="upload_precision",
    )  # fmt: skip
    row2 = st.columns(3)
    resolution = row2[0].text_input(
        LABELS["resolution"], key="upload_resolution", placeholder="WIDTHxHEIGHT, e.g. 512x288"
    )
    mig_profile = row2[1].text_input(
        LABELS["mig_profile"], key="upload_mig_profile", placeholder="e.g. 3g.40gb"
    )
    notes = row2[2].text_input(LABELS["notes"], key="upload_notes")
    row3 = st.columns(2)
    batch = row3[0].text_input(
        label("batch", needs),
        key="upload_batch",
        placeholder="perf_analyzer's -b: one value, or one per file: 1,2,4",
    )
    config = row3[1].text_input(
        LABELS["config"], key="upload_config", placeholder="e.g. add_sub_config_2"
    )
    return UploadForm(
        model, card, precision, resolution, mig_profile, notes, batch, config,
        override_model, override_card,
    )  # fmt: skip


def show_report(problems: ImportProblems, files: int) -> None:
    """Every problem of every file in one box, grouped by file, with what to do."""
    bad = len(problems.files)
    count = problems.count
    parts = [
        f"**{count:,} problem{'s' if count != 1 else ''} in {bad} of {files} "
        f"file{'s' if files != 1 else ''}; nothing was stored.** A field above takes "
        "effect as you type; a file's own problems need the file corrected and chosen "
        "again (remove it with ✕ first)."
    ]
    if problems.general:
        parts.append(f"**The fields above**\n\n{md_list(problems.general)}")
    for report in problems.files:
        kind = FORMAT_NAMES.get(report.format or "", "not recognised")
        parts.append(f"**{md(report.name)}** ({md(kind)})\n\n{md_list(report.lines)}")
    st.error("\n\n".join(parts))


def upload(db: Store) -> None:
    upload_guide()
    files = st.file_uploader(
        "Benchmark files",
        accept_multiple_files=True,
        key="upload_files",
        help=f"Formats: {', '.join(FORMATS[1:])}, recognised from the content. "
        f"At most {MAX_FILE_BYTES // 1024 // 1024} MiB per file.",
    )
    fmt = st.selectbox(
        LABELS["format"],
        list(FORMATS),
        key="upload_format",
        format_func=lambda f: "recognise from the content" if f == "auto" else f,
    )
    chosen = [(f.name, f.getvalue()) for f in files or []]
    form = upload_fields(db, needed(chosen, fmt))
    if not files:
        st.info("Choose one or more files to see what they contain.")
        return
    try:
        result = preview(chosen, form, fmt)
    except ImportProblems as exc:
        show_report(exc, len(files))
        return
    except BadInput as exc:
        show_problems(
            f"{len(exc.problems)} problem(s) in the fields above; nothing was stored. "
            "Correct them and the preview updates at once.",
            exc.problems,
        )
        return
    preview_section(db, result.curves, result.notes, len(files))


def preview_section(db: Store, curves: list[Curve], notes: list[str], files: int) -> None:
    """The curves the files hold, each labelled so that it can be told apart, and the
    choice of which new ones to save."""
    stored = {c.id for c in db.curves()}
    fresh = [c for c in curves if c.id not in stored]
    names = preview_labels(curves)
    st.markdown(f"**Preview**: {len(curves)} curve(s) read from {files} file(s)")
    table(curve_rows(curves, stored), key="upload_preview", column_config=TABLE_COLUMNS)
    if notes:
        st.info(f"**Notes from the import**\n\n{md_list(notes)}")
    else:
        st.success("Every row is valid; the import has no remarks.")
    shown = curves[:PREVIEW_CURVES]
    left, right = st.columns(2)
    labels = [names[c.id] for c in shown]
    left.plotly_chart(
        latency_figure(shown, labels=labels), width="stretch", key="upload_chart_latency"
    )
    right.plotly_chart(
        per_frame_figure(shown, labels=labels), width="stretch", key="upload_chart_per_frame"
    )
    if len(curves) > len(shown):
        st.caption(
            f"The charts and the points below show the first {len(shown)} of "
            f"{len(curves):,} curves; the table above lists them all."
        )
    for index, curve in enumerate(shown):
        with st.expander(f"Points of {md(names[curve.id])}"):
            table(point_table(curve), key=f"upload_points_{index}", height="content")

    if not fresh:
        st.info("Every curve in these files is already stored; saving would change nothing.")
    keep = choose_to_save(fresh, names)
    if st.button(
        f"Save {len(keep)} new curve(s)" if keep else "Save",
        key="upload_save",
        type="primary",
        disabled=not keep,
        icon=":material/save:",
    ):
        saved = db.add_curves(keep)
        listed = "; ".join(f"{md(names.get(c.id, c.label))} ({c.id})" for c in saved)
        flash("success", f"Saved {len(saved)} curve(s): {listed}.")
        set_next_run(tab=BROWSE, model=None, card=None, precision=None, curve=saved[0].id)
        st.rerun()


def choose_to_save(fresh: list[Curve], names: dict[str, str]) -> list[Curve]:
    """The new curves to save: all of them, or those picked when the files hold several."""
    if len(fresh) < 2:
        return fresh
    if len(fresh) > MAX_CHOICES:
        st.caption(f"All {len(fresh):,} new curves are saved together.")
        return fresh
    ids = [c.id for c in fresh]
    # A new set of files starts from "save every new curve".
    if st.session_state.get("upload_offered") != ids:
        st.session_state["upload_offered"] = ids
        st.session_state["upload_chosen"] = ids
    picked = st.multiselect(
        "Curves to save",
        ids,
        format_func=lambda i: f"{names[i]} ({i})",
        key="upload_chosen",
        help="The files hold several curves (one per configuration, say); save only some.",
    )
    return [c for c in fresh if c.id in picked]
