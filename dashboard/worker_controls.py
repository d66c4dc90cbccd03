"""The worker beyond one model (SPEC §6.3), as the Plan and Simulate pages both draw it:
the chain of models it runs on each frame batch (a stored curve and its crops per frame,
added and removed one at a time), the video decoders its streams are decoded on before the
CPU's pre stage, and the co-tenants given by what they run under time-slicing (a stored
curve or its points, a batch and a request rate each), with the busy fraction and busy
period the library derives from them.

Each is a link parameter (``cascade``; ``decode_ms``, ``decoders``, ``codec``,
``cpu_decode_ms``; ``cotenant_curve``, ``cotenant_batch``, ``cotenant_rps``), held in the
page's session state in its widget form (under the page's prefix), so a link opens them
and the page's URL carries them; a plan or a run without them keeps its old link.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any

import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from dashboard.controls import Controls, from_widget, to_widget
from dashboard.tables import curve_name
from planner.curves.curve import Curve
from planner.errors import BadInput
from planner.links.codecs import cascade_entry, points_text
from planner.links.parameters import ParameterSet
from planner.plan.cotenants import WORKLOAD_FIELDS, workloads_of
from planner.store.repository import Store
from planner.text import md
from planner.views.choices import CODECS

CHAIN = ("cascade",)
"""The chain's link parameter."""
DECODE = ("decode_ms", "decoders", "codec", "cpu_decode_ms")
"""The decode stage's link parameters (none set: no decode stage)."""
CROPS = {"fixed": "A fixed number", "poisson": "A Poisson mean"}
"""How a later model's crops per frame are given on this page (a histogram comes by link
or on the command line)."""
_ERROR = "worker_error"
_COTENANT_ERROR = "cotenant_error"


def opened(c: Controls, params: ParameterSet) -> None:
    """A link opened the page: its chain and co-tenants by workload into the page's state.
    A link whose co-tenants are all given by workload keeps the duty cycles empty (they
    would otherwise start from their default when time-slicing is drawn)."""
    c.load(params, [*CHAIN, *DECODE, *WORKLOAD_FIELDS])
    if getattr(params, "cotenant_curve", ()) and not getattr(params, "cotenants", ()):
        c.load(params, ["cotenants"])


def held_workloads(c: Controls) -> dict[str, Any]:
    """The co-tenants by workload the page holds while its sharing mode does not draw
    them: kept as they are (a link's stay in its link), for when time-slicing is picked."""
    return {name: _held(c, name) for name in WORKLOAD_FIELDS}


def _held(c: Controls, name: str) -> tuple[Any, ...]:
    try:
        return tuple(from_widget(name, c.get(name)) or ())
    except BadInput:
        return ()


def _hold(c: Controls, name: str, value: tuple[Any, ...]) -> None:
    st.session_state[c.key(name)] = to_widget(name, value)


def _labels(curves: Sequence[Curve]) -> dict[str, str]:
    return {curve.id: curve_name(curve) for curve in curves}


def _start(c: Controls, name: str, labels: dict[str, str]) -> None:
    """A curve picker of a form starts from the first curve, and goes back to it when the
    curve it held is gone."""
    if c.get(name) not in labels:
        st.session_state[c.key(name)] = next(iter(labels), None)


def chain_controls(c: Controls, bar: DeltaGenerator, curves: Sequence[Curve]) -> list[str]:
    """The models after the first, each with a button that removes it, and a form that
    adds one; the names of the parameters shown."""
    c.labels["cascade"] = "Models after the first"
    labels = _labels(curves)
    chain = _held(c, "cascade")
    bar.markdown("**Models after the first, on the crops of the one before**")
    for i, text in enumerate(chain):
        entry = cascade_entry(text)
        left, right = bar.columns([4, 1])
        name = labels.get(entry.curve, entry.curve)
        left.caption(f"{i + 2}. {md(name)}, on {md(entry.crops.words)}")
        right.button(
            "Remove",
            key=c.key(f"cascade_remove_{i}"),
            on_click=_remove,
            args=(c, i),
            help="Take this model out of the chain.",
        )
    with bar.expander("Add a model to the chain"):
        _start(c, "cascade_curve", labels)
        st.selectbox(
            "Its batch curve",
            list(labels),
            key=c.key("cascade_curve"),
            format_func=lambda i: labels.get(i, i),
            help="The stored curve of the model run on the crops (a classifier, pose, "
            "re-identification or OCR model). Add curves on the Curves page.",
        )
        left, right = st.columns(2)
        st.session_state.setdefault(c.key("cascade_kind"), "fixed")
        left.radio(
            "Crops per frame",
            list(CROPS),
            key=c.key("cascade_kind"),
            format_func=CROPS.__getitem__,
            help="Objects the model before finds per frame: the same count on every frame, "
            "or drawn per frame from a Poisson law with this mean.",
        )
        st.session_state.setdefault(c.key("cascade_crops"), 3.0)
        right.number_input(
            "Count or mean", min_value=0.0, step=1.0, format="%g", key=c.key("cascade_crops")
        )
        st.button("Add to the chain", key=c.key("cascade_add"), on_click=_add, args=(c,))
    error = st.session_state.pop(c.key(_ERROR), None)
    if error:
        bar.error(md(error))
    return list(CHAIN)


def decoder_controls(c: Controls, bar: DeltaGenerator) -> list[str]:
    """The video decoders the streams are decoded on before the CPU's pre stage; the names
    of the parameters shown."""
    bar.markdown("**Video decoders**")
    left, right = bar.columns(2)
    c.number(
        left,
        "decode_ms",
        "Decoder time per frame (ms)",
        step=0.5,
        placeholder="no decode stage",
        help="One decoder engine's time to decode a frame of these streams. Empty: no "
        "decode stage (decoding, if any, is in the CPU's pre work).",
    )
    c.number(
        right,
        "decoders",
        "Decoders",
        placeholder="the card's",
        help="How many decoder engines one instance has. Empty: the card's, or under MIG "
        "the profile's, from the catalogue.",
    )
    left, right = bar.columns(2)
    c.select(
        left,
        "codec",
        "Codec",
        CODECS,
        help="h264 and h265 decode every frame, even those the worker later drops; jpeg "
        "decodes only the frames taken.",
    )
    c.number(
        right,
        "cpu_decode_ms",
        "CPU decode per frame (ms)",
        step=0.5,
        placeholder="not set",
        help="The CPU's time to decode a frame where an instance has no decoder (an A100 "
        "1g.5gb, an A30 1g.6gb): decoding then runs on the CPU threads.",
    )
    return list(DECODE)


def _add(c: Controls) -> None:
    kind, count = c.get("cascade_kind"), c.get("cascade_crops")
    crops = f"poisson={count:g}" if kind == "poisson" else f"{count:g}"
    try:
        entry = cascade_entry(f"{c.get('cascade_curve')}:{crops}")
        _hold(c, "cascade", (*_held(c, "cascade"), entry.text))
    except BadInput as exc:
        st.session_state[c.key(_ERROR)] = "Cannot add this model: " + "; ".join(exc.problems)


def _remove(c: Controls, index: int) -> None:
    chain = list(_held(c, "cascade"))
    if 0 <= index < len(chain):
        del chain[index]
    _hold(c, "cascade", tuple(chain))


def workload_controls(
    c: Controls, bar: DeltaGenerator, db: Store, curves: Sequence[Curve]
) -> list[str]:
    """Co-tenants by workload under time-slicing: each with what the library derives from
    it (busy fraction, busy period, memory) and a button that removes it, and a form that
    adds one; the names of the parameters shown."""
    for name, label in zip(WORKLOAD_FIELDS, ("curve", "batch", "request rate"), strict=True):
        c.labels[name] = f"Co-tenant's {label}"
    labels = _labels(curves)
    rows = list(zip(*(_held(c, name) for name in WORKLOAD_FIELDS), strict=False))
    bar.markdown("**Co-tenants by what they run**")
    for i, (curve, batch, rps) in enumerate(rows):
        left, right = bar.columns([4, 1])
        one = SimpleNamespace(cotenant_curve=(curve,), cotenant_batch=(batch,), cotenant_rps=(rps,))
        try:
            (workload,) = workloads_of(one, db)
        except BadInput as exc:
            left.warning(md("; ".join(exc.problems)))
        else:
            text = workload.derivation
            left.caption(md(f"{text[0].upper()}{text[1:]}."))
        right.button(
            "Remove",
            key=c.key(f"cotenant_remove_{i}"),
            on_click=_remove_cotenant,
            args=(c, i),
            help="Take this co-tenant off the card.",
        )
    with bar.expander("Add a co-tenant by its workload"):
        _start(c, "cotenant_pick", labels)
        st.selectbox(
            "Its batch curve",
            list(labels),
            key=c.key("cotenant_pick"),
            format_func=lambda i: labels.get(i, i),
            help="The stored curve of what the co-tenant runs (a text-to-speech model, say).",
        )
        st.text_input(
            "Or its points (batch:ms)",
            key=c.key("cotenant_pick_points"),
            placeholder="e.g. 1:5,4:12",
            help="The co-tenant's batch curve as measured points, batch:latency in ms, "
            "used instead of a stored curve when given.",
        )
        left, right = st.columns(2)
        st.session_state.setdefault(c.key("cotenant_pick_batch"), 4)
        left.number_input("Batch", min_value=1, step=1, key=c.key("cotenant_pick_batch"))
        st.session_state.setdefault(c.key("cotenant_pick_rps"), 30.0)
        right.number_input(
            "Requests per second",
            min_value=0.0,
            step=5.0,
            format="%g",
            key=c.key("cotenant_pick_rps"),
            help="Frames per second it serves, in batches of the size given.",
        )
        st.button("Add the co-tenant", key=c.key("cotenant_add"), on_click=_add_cotenant, args=(c,))
    error = st.session_state.pop(c.key(_COTENANT_ERROR), None)
    if error:
        bar.error(md(error))
    return list(WORKLOAD_FIELDS)


def _add_cotenant(c: Controls) -> None:
    given = str(c.get("cotenant_pick_points") or "").strip()
    curve = c.get("cotenant_pick")
    if given:
        try:
            curve = points_text(given)
        except BadInput as exc:
            st.session_state[c.key(_COTENANT_ERROR)] = "Cannot add this co-tenant: " + "; ".join(
                exc.problems
            )
            return
        st.session_state[c.key("cotenant_pick_points")] = ""  # added: the box is free again
    new = (curve, float(c.get("cotenant_pick_batch")), c.get("cotenant_pick_rps"))
    for name, value in zip(WORKLOAD_FIELDS, new, strict=True):
        _hold(c, name, (*_held(c, name), value))


def _remove_cotenant(c: Controls, index: int) -> None:
    for name in WORKLOAD_FIELDS:
        held = list(_held(c, name))
        if 0 <= index < len(held):
            del held[index]
        _hold(c, name, tuple(held))
