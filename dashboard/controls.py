"""Widgets for link parameters: each widget edits one parameter of a page's parameter set.

A widget's key is the page's prefix plus the parameter's name (``plan_budget_ms``), its
range and choices come from the parameter's codec in ``planner.links.urls.PARAMETERS``, so
every value a valid link can carry fits its widget. Values go into a widget only through
``st.session_state`` (``load`` when a link opens, ``default`` when a widget first shows),
never through a ``value=`` argument, so a link and a default never compete.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from dashboard.tables import curve_name
from planner import limits
from planner.curves.cards import Card
from planner.curves.curve import Curve
from planner.errors import BadInput, NotFound
from planner.links.codecs import Float, Int, Maybe, Numbers, Subset, Texts
from planner.links.parameters import PARAMETERS, ParameterSet, schema
from planner.store.repository import Store


def _codec(name: str) -> Any:
    codec = PARAMETERS[name].codec
    return codec.inner if isinstance(codec, Maybe) else codec


JS_MAX_INTEGER = 2**53 - 1
"""The largest whole number a browser's number input holds exactly."""


def _typed(name: str) -> bool:
    """Whether the parameter's widget is a text box: whole numbers beyond what a browser's
    number input can hold (a seed up to 2**63 - 1, say)."""
    codec = _codec(name)
    return isinstance(codec, Int) and codec.high > JS_MAX_INTEGER


def to_widget(name: str, value: Any) -> Any:
    """A parameter's value as its widget holds it (lists for multiselects, text for lists
    of numbers)."""
    codec = _codec(name)
    if value is None:
        return None
    if isinstance(codec, Subset | Texts):
        return list(value)
    if isinstance(codec, Numbers) or _typed(name):
        return codec.format(value)
    return value


def from_widget(name: str, value: Any) -> Any:
    """A widget's value as the parameter takes it; BadInput for text that does not parse."""
    codec = _codec(name)
    if value is None:
        return None
    if isinstance(codec, Subset | Texts):
        return tuple(value)
    if isinstance(codec, Numbers):
        text = str(value).strip()
        return codec.parse(text) if text else ()
    if _typed(name):
        text = str(value).strip()
        return codec.parse(text) if text else None
    return value


class Controls:
    """The widgets of one page (keys ``prefix + name``) and the values they hold."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.labels: dict[str, str] = {}

    def key(self, name: str) -> str:
        return f"{self.prefix}{name}"

    def load(self, params: ParameterSet, names: Sequence[str] | None = None) -> None:
        """Put the parameters' values into the widgets (before they are drawn)."""
        for name in names or schema(type(params)):
            st.session_state[self.key(name)] = to_widget(name, getattr(params, name))

    def default(self, name: str, value: Any) -> None:
        """The value a widget starts from when it has none (e.g. when it first appears)."""
        st.session_state.setdefault(self.key(name), to_widget(name, value))

    def get(self, name: str) -> Any:
        return st.session_state.get(self.key(name))

    def number(
        self,
        parent: DeltaGenerator,
        name: str,
        label: str,
        *,
        step: float | None = None,
        fmt: str | None = None,
        help: str | None = None,
        placeholder: str | None = None,
    ) -> Any:
        """A number input over the parameter's whole valid range (empty allowed when the
        parameter is optional)."""
        self.labels[name] = label
        if _typed(name):
            return parent.text_input(label, key=self.key(name), help=help, placeholder=placeholder)
        codec = PARAMETERS[name].codec
        optional = isinstance(codec, Maybe)
        inner = _codec(name)
        options: dict[str, Any] = {"key": self.key(name), "help": help}
        if isinstance(inner, Int):
            options.update(min_value=inner.low, max_value=inner.high, step=int(step or 1))
        elif isinstance(inner, Float):
            options.update(min_value=float(inner.low), max_value=float(inner.high))
            options.update(step=float(step or 1.0), format=fmt or "%g")
        if optional:
            options.update(value=None, placeholder=placeholder)
        return parent.number_input(label, **options)

    def select(
        self,
        parent: DeltaGenerator,
        name: str,
        label: str,
        options: Sequence[Any],
        *,
        format_func: Callable[[Any], str] = str,
        help: str | None = None,
        placeholder: str | None = None,
        optional: bool = False,
        **extra: Any,
    ) -> Any:
        """A selectbox; ``optional`` allows no choice (shown as ``placeholder``)."""
        self.labels[name] = label
        if optional:
            extra.update(index=None, placeholder=placeholder)
        return parent.selectbox(
            label, list(options), key=self.key(name), format_func=format_func, help=help, **extra
        )

    def multi(
        self,
        parent: DeltaGenerator,
        name: str,
        label: str,
        options: Sequence[str],
        *,
        help: str | None = None,
        placeholder: str | None = None,
    ) -> Any:
        self.labels[name] = label
        return parent.multiselect(
            label, list(options), key=self.key(name), help=help, placeholder=placeholder
        )

    def check(
        self, parent: DeltaGenerator, name: str, label: str, *, help: str | None = None
    ) -> Any:
        """A checkbox for a yes-or-no parameter."""
        self.labels[name] = label
        self.default(name, PARAMETERS[name].default)
        return parent.checkbox(label, key=self.key(name), help=help)

    def text(
        self,
        parent: DeltaGenerator,
        name: str,
        label: str,
        *,
        help: str | None = None,
        placeholder: str | None = None,
    ) -> Any:
        self.labels[name] = label
        return parent.text_input(label, key=self.key(name), help=help, placeholder=placeholder)

    def values(self, names: Sequence[str] | None = None) -> tuple[dict[str, Any], list[str]]:
        """The parameters the drawn widgets hold, and one problem per value that is not
        valid, named by its label."""
        out: dict[str, Any] = {}
        problems: list[str] = []
        for name in names or list(self.labels):
            try:
                out[name] = from_widget(name, self.get(name))
            except BadInput as exc:
                problems.extend(f"{self.labels.get(name, name)}: {p}" for p in exc.problems)
        return out, problems

    def explain(self, problems: Sequence[str]) -> list[str]:
        """Problems of a parameter set (``name: reason``) with widget labels for names."""
        out = []
        for problem in problems:
            name, sep, rest = problem.partition(": ")
            out.append(f"{self.labels[name]}: {rest}" if sep and name in self.labels else problem)
        return out


# ---------------------------------------------------------------------------------------
# The curve a plan or a simulation runs on: a stored curve, or the one a link embeds.

LINKED = "link"
"""The curve picker's value for a curve embedded in a self-contained link."""
CURVE_FIELDS = ("points", "model", "card", "precision", "resolution")


def load_curve(c: Controls, params: Any, default_id: str) -> None:
    """Point the curve picker at the curve ``params`` name (embedded points, a stored
    id, or nothing: the default curve)."""
    if params.points is not None:
        st.session_state[c.key("linked")] = {n: getattr(params, n) for n in CURVE_FIELDS}
        st.session_state[c.key("curve")] = LINKED
    else:
        st.session_state.pop(c.key("linked"), None)
        st.session_state[c.key("curve")] = params.curve or default_id
    st.session_state[c.key("curve_named")] = params.curve is not None


def pick_curve(
    c: Controls, parent: DeltaGenerator, curves: Sequence[Curve], default_id: str
) -> dict[str, Any]:
    """The curve picker; returns the parameters that name the chosen curve.

    Until someone names a curve (a link with ``curve=ID``, or a pick in this list), the
    plan names none and runs on the server's default curve, so the default plan's link is
    just ``/``. A curve from a link stays embedded until another is picked.
    """
    linked = st.session_state.get(c.key("linked"))
    labels = {curve.id: curve_name(curve) for curve in curves}
    options = list(labels)
    if linked is not None:
        options.insert(0, LINKED)
        labels[LINKED] = f"{linked_label(linked)} (from the link)"
    c.default("curve", default_id)
    if c.get("curve") not in options:
        st.session_state[c.key("curve")] = default_id
    choice = c.select(
        parent,
        "curve",
        "Batch curve",
        options,
        format_func=lambda i: labels.get(i, i),
        help="The measured batch curve of one model on one card, precision and input size. "
        "Add curves on the Curves page.",
        on_change=name_curve,
        args=(c,),
    )
    if choice == LINKED and linked is not None:
        return {"curve": None, **linked}
    named = st.session_state.get(c.key("curve_named"), False)
    return {"curve": choice if named or choice != default_id else None}


def name_curve(c: Controls) -> None:
    """From now on the plan names its curve, even the default one."""
    st.session_state[c.key("curve_named")] = True


def linked_label(fields: dict[str, Any]) -> str:
    """A label for embedded points, from the labels the link gives."""
    parts = [p for p in (fields.get("resolution"), (fields.get("precision") or "").upper()) if p]
    model = fields.get("model") or "unnamed model"
    card = fields.get("card") or "unnamed card"
    return f"{model} on {card}" + (f", {' '.join(parts)}" if parts else "")


def chosen_card(db: Store, chosen: dict[str, Any], default: Curve) -> Card | None:
    """The catalogue card of the curve ``pick_curve`` chose (None if it is not in the
    catalogue): it decides which sharing modes and MIG profiles are offered."""
    try:
        if chosen.get("points") is not None:
            name = chosen.get("card")
        else:
            name = db.curve(chosen["curve"]).card if chosen.get("curve") else default.card
        return db.card(name) if name else None
    except (NotFound, BadInput):
        return None


QUEUE_FIELDS = ("queue", "max_queue_size", "queue_timeout_us", "timeout_action")
"""The server's queue (``Scenario.queue``) and Triton's queue policy under ``all``."""


def queue_controls(c: Controls, parent: DeltaGenerator) -> list[str]:
    """What the server keeps of a session's frames, and under ``all`` its queue policy;
    the names of the parameters shown."""
    c.select(
        parent,
        "queue",
        "Frames the server keeps",
        list(limits.QUEUES),
        format_func=lambda q: {
            "newest": "newest per session (older overwritten)",
            "all": "all, queued (Triton, KServe)",
        }[q],
        help="newest: the reference worker keeps each session's newest frame and overwrites "
        "older ones. all: most inference servers (Triton, KServe) queue every frame as a "
        "request; past saturation the queue and latency grow through the run.",
    )
    if c.get("queue") != "all":
        return ["queue"]
    left, right = parent.columns(2)
    c.number(
        left,
        "max_queue_size",
        "Queue bound",
        placeholder="none",
        help="Triton's max_queue_size: a request that finds this many waiting is rejected.",
    )
    c.number(
        right,
        "queue_timeout_us",
        "Timeout (µs)",
        step=1000.0,
        placeholder="none",
        help="Triton's default_timeout_microseconds: how long a request may wait.",
    )
    c.select(
        parent,
        "timeout_action",
        "On timeout",
        list(limits.TIMEOUT_ACTIONS),
        help="reject: the request is dropped; delay: it waits behind every request still "
        "within its timeout.",
    )
    return list(QUEUE_FIELDS)
