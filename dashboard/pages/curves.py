"""Curves: browse, upload, edit, delete and download measured batch curves."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import streamlit as st

from dashboard.charts import Fitted, fit_figure, latency_figure, loo_figure, per_frame_figure
from dashboard.state import store
from dashboard.tables import (
    curve_name,
    curve_rows,
    download_name,
    long_metadata,
    loo_rows,
    metadata_rows,
    point_columns,
    point_rows,
    point_table,
    points_from_rows,
    preview_labels,
)
from dashboard.ui import (
    FORGET,
    apply_next_run,
    flash,
    set_next_run,
    show_flash,
    show_problems,
    table,
)
from dashboard.uploads import LABELS, UploadForm, label, needed, preview
from planner import display
from planner.curves import measure_next
from planner.curves.curve import PRECISIONS, Curve
from planner.curves.fit import fit_curve
from planner.curves.imports import FORMAT_NAMES, FORMATS, MAX_FILE_BYTES, ImportProblems
from planner.curves.imports.native import template_csv, to_csv
from planner.errors import BadInput, NotFound
from planner.store.repository import Store
from planner.text import md, md_list

BROWSE, UPLOAD = "Stored curves", "Upload"
PREVIEW_CURVES = 20  # drawn in the upload preview; a 5 MiB file can hold thousands
MAX_CHOICES = 50  # new curves offered one by one; more are saved together
TABLE_COLUMNS: dict[str, Any] = {
    "id": st.column_config.TextColumn("id", width="medium"),
    "points": st.column_config.NumberColumn("points", format="%d", width="small"),
}
POINT_COLUMNS: dict[str, Any] = {
    "batch": st.column_config.NumberColumn("batch", min_value=1, step=1, format="%d"),
    "latency_ms": st.column_config.NumberColumn("latency (ms)", min_value=0.0),
    "p10_ms": st.column_config.NumberColumn("p10 (ms)", min_value=0.0),
    "p50_ms": st.column_config.NumberColumn("p50 (ms)", min_value=0.0),
    "p90_ms": st.column_config.NumberColumn("p90 (ms)", min_value=0.0),
    "p99_ms": st.column_config.NumberColumn("p99 (ms)", min_value=0.0),
    "std_ms": st.column_config.NumberColumn("std (ms)", min_value=0.0),
    "n": st.column_config.NumberColumn("runs", min_value=1, step=1, format="%d"),
    "memory_mb": st.column_config.NumberColumn("memory (MB)", min_value=0.0),
}


def browse(db: Store) -> None:
    everything = db.curves()
    if not everything:
        st.info("No curves are stored. Add one from a benchmark file under **Upload**.")
        return
    left, middle, right = st.columns(3)
    model = left.selectbox(
        "Model",
        sorted({c.model for c in everything}),
        index=None,
        placeholder="All models",
        key="model",
        bind="query-params",
    )
    card = middle.selectbox(
        "Card",
        sorted({c.card for c in everything}),
        index=None,
        placeholder="All cards",
        key="card",
        bind="query-params",
    )
    precision = right.selectbox(
        "Precision",
        [p for p in PRECISIONS if any(c.precision == p for c in everything)],
        index=None,
        placeholder="All precisions",
        key="precision",
        bind="query-params",
    )
    curves = [
        c
        for c in everything
        if model in (None, c.model) and card in (None, c.card) and precision in (None, c.precision)
    ]
    if not curves:
        no_match()
        return
    table(curve_rows(curves), key="curves_table", column_config=TABLE_COLUMNS)
    st.caption(f"{len(curves)} of {len(everything)} stored curves. Latency is per batched call.")

    by_id = {c.id: c for c in curves}
    # Kept in the URL by hand: a bound selectbox would write its label, not the id.
    linked = st.query_params.get("curve")
    if linked and all(c.id != linked for c in everything):
        st.warning(f"No stored curve has the id {md(repr(linked[:40]))}; showing another one.")
    if linked in by_id and "curve" not in st.session_state:
        st.session_state["curve"] = linked  # the link's choice, on the page's first run
    chosen = st.selectbox(
        "Curve to show",
        list(by_id),
        format_func=lambda i: f"{curve_name(by_id[i])}  ({i})",
        key="curve",
    )
    if chosen is not None:
        st.query_params["curve"] = chosen
        detail(db, by_id[chosen])


def no_match() -> None:
    """The empty state of the filters: say so, and offer to clear them."""
    st.info("No stored curve matches these filters.", icon=":material/filter_alt_off:")
    if st.button("Clear filters", key="curves_clear_filters", icon=":material/clear_all:"):
        set_next_run(model=None, card=None, precision=None)
        st.rerun()


def flagged(curve: Curve) -> None:
    """A flagged curve says why wherever it is shown in detail, and how to replace it."""
    if not curve.flag:
        return
    st.warning(
        f"**Flagged: {md(curve.flag)}.** This curve is kept out of Compare cards and out "
        "of the Plan page's default choices. Measure the card again on an idle device.",
        icon=":material/warning:",
    )
    st.page_link(
        "dashboard/pages/measure.py",
        label="Measure it again",
        icon=":material/speed:",
    )


def detail(db: Store, curve: Curve) -> None:
    st.subheader(md(curve.label), anchor=False)  # no in-page link made of user text
    flagged(curve)
    links = st.columns(3)
    links[0].page_link(
        "dashboard/pages/plan.py",
        label="Plan seats with this curve",
        icon=":material/event_seat:",
        query_params={"curve": curve.id},
    )
    links[1].page_link(
        "dashboard/pages/simulate.py",
        label="Simulate sessions on it",
        icon=":material/timeline:",
        query_params={"curve": curve.id},
    )
    diagnostics(curve)
    about, points = st.columns(2, gap="large")
    with about:
        st.markdown("**About this curve**")
        table(
            metadata_rows(curve),
            key="curve_metadata",
            height="content",
            column_config={"value": st.column_config.TextColumn("value", width="large")},
        )
        for name, text in long_metadata(curve):
            st.caption(f"**{md(name)}**: {md(text)}")
        st.download_button(
            "Download CSV",
            data=to_csv([curve]),
            file_name=download_name(curve),
            mime="text/csv",
            key="curve_download",
            on_click="ignore",
            icon=":material/download:",
        )
        rename_controls(db, curve)
        delete_controls(db, curve)
    with points:
        st.markdown("**Points** (edit cells, add or remove rows)")
        editor_key = f"points_editor_{curve.id}"
        edited = st.data_editor(
            point_rows(curve),
            key=editor_key,
            num_rows="dynamic",
            hide_index=True,
            column_config={c: POINT_COLUMNS[c] for c in point_columns(curve)},
        )
        st.caption(
            "Saving edited points makes a **new curve with its own id**. This curve stays "
            "as it is, so saved plans that use it keep working; delete it afterwards if you "
            "no longer need it."
        )
        if st.button("Save as a new curve", key="points_save", icon=":material/save:"):
            save_edit(db, curve, edited, editor_key)


def diagnostics(curve: Curve) -> None:
    """How well the points pin the curve down: the fit with its band against the
    straight-line method, throughput and time per frame, leave-one-out errors, reconciled
    points and the batch size worth measuring next."""
    fit = fit_curve(curve.points)
    entry = [Fitted(curve.label, curve.points, fit)]
    upto = min(max(32, 2 * curve.points[-1].batch), 256)
    left, right = st.columns(2)
    left.plotly_chart(
        fit_figure(entry, upto=upto, straight=True), width="stretch", key="chart_latency"
    )
    right.plotly_chart(
        fit_figure(entry, view="per_frame", upto=upto), width="stretch", key="chart_per_frame"
    )
    st.caption(
        "The line is the fit (dotted where extrapolated), the shaded band how far it could "
        "be off, the dashed grey line the straight-line method (interpolate between "
        "neighbours, extend the nearest two points). Time per frame is the latency of a call "
        "divided by its batch size: where it falls as the batch grows, batching pays on this "
        "card; where it stays flat or rises, batching only adds waiting."
    )
    left, right = st.columns(2)
    left.plotly_chart(
        fit_figure(entry, view="throughput", upto=upto), width="stretch", key="chart_throughput"
    )
    with right:
        st.markdown(f"**The fit.** {md(fit.description)}.")
        if fit.reconciled:
            names = ", ".join(str(b) for b in fit.reconciled)
            st.warning(
                f"Measured latency fell with batch size, which the fit does not allow: the "
                f"points were reconciled to the nearest non-decreasing curve, and batch "
                f"{names} could not be honoured (likely noise). They show as crosses.",
                icon=":material/warning:",
            )
        advice = measure_next.for_curve(fit)
        if advice.batch is not None:
            st.info(
                f"**Measure batch {advice.batch} next**, relative to {advice.basis}. A plan "
                "weights the batch sizes its decision rests on, so the Plan page may name "
                "another batch for this curve.",
                icon=":material/straighten:",
            )
        loo = fit.loo
        if loo is None:
            st.caption(
                "Leave-one-out needs three points or more: with fewer, each point is needed "
                "to draw the curve at all."
            )
        else:
            inside = sum(p.inside for p in loo.points)
            st.markdown(
                f"**Leave-one-out** (each point predicted from the others): the fit is off "
                f"by {display.fraction(loo.fit)} on average, the straight-line method by "
                f"{display.fraction(loo.straight_line)}; {inside} of {len(loo.points)} points "
                "fell inside "
                "the predicted band."
            )
    if loo is not None:
        left, right = st.columns(2)
        figure = loo_figure(fit)
        if figure is not None:
            left.plotly_chart(figure, width="stretch", key="chart_loo")
        with right:
            table(loo_rows(fit), key="curve_loo")
    with st.expander("What the fit assumes"):
        st.markdown(md_list(fit.assumptions))


def save_edit(db: Store, curve: Curve, rows: list[dict[str, Any]], editor_key: str) -> None:
    try:
        points = points_from_rows(rows)
    except BadInput as exc:
        show_problems("The edited points were not saved:", exc.problems)
        return
    edited = curve.with_points(points, source="uploaded")
    if edited.id == curve.id:
        st.info("The points are unchanged, so there is nothing to save.")
        return
    edited = replace(edited, environment={**curve.environment, "edited_from": curve.id})
    saved = db.add_curves([edited])[0]
    flash(
        "success",
        f"Saved the edited points as a new curve, **{saved.id}**. "
        f"The original ({curve.id}) is unchanged.",
    )
    set_next_run(curve=saved.id, **{editor_key: FORGET})
    st.rerun()


def rename_controls(db: Store, curve: Curve) -> None:
    """Store the curve under another model or card name (a new curve, like an edit)."""
    with st.expander("Rename model or card"):
        left, right = st.columns(2)
        model = left.text_input("New model name", key=f"rename_model_{curve.id}",
                                placeholder=curve.model)  # fmt: skip
        card = right.text_input("New card name", key=f"rename_card_{curve.id}",
                                placeholder=curve.card)  # fmt: skip
        st.caption(
            "Renaming makes a **new curve with its own id** that records this one's id; this "
            "curve stays for the saved plans that use it."
        )
        if st.button("Save under the new names", key="curve_rename", icon=":material/edit:"):
            try:
                renamed = db.rename_curve(curve.id, model=model, card=card)
            except BadInput as exc:
                show_problems("The curve was not renamed:", exc.problems)
                return
            flash(
                "success",
                f"Saved as {md(renamed.label)}, a new curve **{renamed.id}** renamed from "
                f"{curve.id}; the original is unchanged.",
            )
            set_next_run(
                curve=renamed.id, model=None, card=None, precision=None,
                **{f"rename_model_{curve.id}": FORGET, f"rename_card_{curve.id}": FORGET},
            )  # fmt: skip
            st.rerun()


def delete_controls(db: Store, curve: Curve) -> None:
    if st.button("Delete curve", key="curve_delete", icon=":material/delete:"):
        if db.plans_using(curve.id):
            st.session_state["confirm_delete"] = curve.id
        else:
            delete(db, curve, force=False)
    if st.session_state.get("confirm_delete") != curve.id:
        return
    users = db.plans_using(curve.id)
    with st.container(border=True):
        st.warning(
            f"{len(users)} saved plan(s) use this curve: {md(', '.join(users))}. "
            "Their links will open with the default curve instead. Delete it anyway?"
        )
        yes, no = st.columns(2)
        if yes.button("Delete anyway", key="curve_delete_confirm", type="primary"):
            delete(db, curve, force=True)
        if no.button("Keep the curve", key="curve_delete_cancel"):
            st.session_state.pop("confirm_delete", None)
            st.rerun()


def delete(db: Store, curve: Curve, *, force: bool) -> None:
    try:
        db.delete_curve(curve.id, force=force)
    except (BadInput, NotFound) as exc:
        show_problems("The curve was not deleted:", exc.problems)
        return
    st.session_state.pop("confirm_delete", None)
    flash("success", f"Deleted curve {curve.id} ({md(curve.label)}).")
    set_next_run(curve=FORGET)
    st.query_params.pop("curve", None)
    st.rerun()


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


apply_next_run()
show_flash()
st.title("Batch curves")
st.caption(
    "A batch curve is the latency of one batched inference call at each batch size, measured "
    "for one model on one card, precision and input size. The planner simulates live "
    "sessions on these curves."
)
db = store()
view_browse, view_upload = st.tabs([BROWSE, UPLOAD], key="tab", bind="query-params")
with view_browse:
    browse(db)
with view_upload:
    upload(db)
