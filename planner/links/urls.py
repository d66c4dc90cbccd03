"""Share links: the parameters of a plan, a simulation or a card comparison as a URL.

Each page's parameters are a frozen dataclass (``PlanParams``, ``SimulateParams``,
``CompareParams``) whose fields carry their *codec* in the field metadata: how the value
is written in a query string, how it is read back, and what range or choices are valid.
The dataclass is validated on construction, so an instance is always a valid plan, and
the same object is encoded into a link, saved under a short id, and decoded again:
``decode(type(p), encode(p)) == (p, [])``.

Links are written for people as well as machines: parameter names are the command-line
option names with underscores (``budget_ms=40``), lists are comma-separated
(``policies=oldest-first,batch-all``), embedded points are ``batch:latency_ms`` pairs
(``points=1:9.82,2:20.36``), and parameters at their default are left out so links stay
short. Reading a link never fails: an unknown, malformed or out-of-range parameter falls
back to its default and produces one plain message saying what was ignored.

A plan's calibration (SPEC §5.2) is pinned by id (``calibration=ID``). A link without the
parameter is an uncalibrated plan: every link written before calibrations existed keeps
its figures, and a calibration made later never changes what an older link shows.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any, Protocol, TypeAlias, TypeVar
from urllib.parse import quote, urlencode

from planner.curves.curve import (
    Curve,
    Point,
    make_curve,
)
from planner.errors import BadInput, NotFound
from planner.links.codecs import Subset, number_text, quoted
from planner.links.parameters import Parameter, ParameterSet, schema

PLAN_KEY = "plan"
"""The query parameter of a saved plan's short id: ``/?plan=ID``."""
RESERVED = frozenset({PLAN_KEY, "embed", "embed_options"})
"""Query parameters that are not plan fields but are not errors either (``embed`` and
``embed_options`` are Streamlit's own)."""

Query: TypeAlias = Mapping[str, str | Sequence[str]]
"""Query parameters as a web framework hands them over: one value or all values per key."""

_PLAN_ID = re.compile(r"^[0-9a-f]{10}$")


class EmbedsCurve(Protocol):
    """A parameter set that names a stored curve or embeds one (plan, simulation)."""

    @property
    def curve(self) -> str | None: ...

    @property
    def points(self) -> tuple[Point, ...] | None: ...

    @property
    def model(self) -> str | None: ...

    @property
    def card(self) -> str | None: ...

    @property
    def precision(self) -> str | None: ...

    @property
    def resolution(self) -> str | None: ...


P = TypeVar("P", bound=ParameterSet)
C = TypeVar("C", bound=EmbedsCurve)


def encode(params: ParameterSet, *, include_defaults: bool = False) -> dict[str, str]:
    """Query parameters for ``params``: text values, defaults left out unless asked for.

    Unset optional values are always left out. ``include_defaults=True`` is what a saved
    plan stores, so that a later change of a default does not change a saved plan.
    """
    out: dict[str, str] = {}
    for name, parameter in schema(type(params)).items():
        value = getattr(params, name)
        if value is None or (value == parameter.default and not include_defaults):
            continue
        text = parameter.codec.format(value)
        if text:
            out[name] = text
    return out


def decode(
    cls: type[P],
    query: Query,
    *,
    load_plan: Callable[[str], Mapping[str, Any]] | None = None,
) -> tuple[P, list[str]]:
    """Parameters from a query string, and one message per parameter that was ignored.

    Never raises: an unknown parameter, a value that does not parse or is out of range,
    or a combination that does not go together falls back to the default and adds a
    message such as ``ignored budget_ms='abc': not a number; using the default 50``.
    With ``load_plan`` (e.g. ``Store.plan``), ``plan=ID`` loads a saved plan's parameters
    first; parameters given next to it in the same link take precedence.
    """
    ignored: list[str] = []
    merged: dict[str, Any] = {}
    if load_plan is not None and PLAN_KEY in query:
        saved = _saved(query[PLAN_KEY], load_plan, ignored)
        if saved:
            # A saved plan stores every parameter (``saved_params``); one saved before a
            # parameter existed ran as its ``BEFORE_ADDED`` value, and keeps doing so.
            merged.update({k: v for k, v in BEFORE_ADDED.items() if k in schema(cls)})
        merged.update(saved)
    merged.update({k: v for k, v in query.items() if k != PLAN_KEY})

    specs = schema(cls)
    values: dict[str, Any] = {}
    for key, raw in merged.items():
        if not isinstance(key, str):
            ignored.append(f"ignored a parameter whose name is not text: {quoted(key)}")
            continue
        if key in RESERVED or key in cls.views:
            continue
        if key not in specs:
            ignored.append(f"ignored unknown parameter {quoted(key)}")
            continue
        parameter = specs[key]
        text = _one_value(key, raw, ignored)
        if text is None:
            continue
        try:
            values[key] = parameter.codec.parse(text)
        except BadInput as exc:
            reason = "; ".join(exc.problems)
            ignored.append(f"ignored {key}={quoted(text)}: {reason}; {_fallback(parameter)}")

    # Settling one conflict (a value back at its default) can make another: settle again
    # until none is left; each round resets at least one given value, so this ends.
    for _ in range(len(specs)):
        effective = {name: values.get(name, p.default) for name, p in specs.items()}
        found = cls.conflicts(effective)
        if not found:
            break
        for names, message in found:
            # Only what the link gave is ignored: a default it left alone is not.
            given = [name for name in names if name in values] or list(names)
            for name in given:
                values.pop(name, None)
            ignored.append(f"ignored {', '.join(given)}: {message}")

    try:
        return cls(**values), ignored
    except BadInput as exc:  # pragma: no cover - every field was checked above
        return cls(), [*ignored, f"ignored the whole link: {'; '.join(exc.problems)}"]


def _saved(
    raw: object, load_plan: Callable[[str], Mapping[str, Any]], ignored: list[str]
) -> dict[str, Any]:
    values = [raw] if isinstance(raw, str) else raw if isinstance(raw, list | tuple) else None
    if values is not None and all(isinstance(v, str) and not v.strip() for v in values):
        # Unlike an empty plan field (its default), ``plan=`` names no saved plan to open.
        ignored.append(f"ignored {PLAN_KEY}: empty")
        return {}
    text = _one_value(PLAN_KEY, raw, ignored)
    if text is None:
        return {}
    plan_id = text.strip().lower()
    if not _PLAN_ID.match(plan_id):
        ignored.append(f"ignored plan={quoted(text)}: not a saved plan id; using the defaults")
        return {}
    try:
        saved = load_plan(plan_id)
    except NotFound:
        ignored.append(f"ignored plan={quoted(text)}: no saved plan with that id on this server")
        return {}
    return dict(saved) if isinstance(saved, Mapping) else {}


BEFORE_ADDED = {"spread": "0"}
"""Parameters added after plans were first saved, with the value that a saved plan which
does not name them ran as, where that is not their default: batch-time spread (on by
default since it was added) was not simulated before, so an older saved plan keeps its
numbers on a curve whose points carry spread."""


def _one_value(key: str, raw: object, ignored: list[str]) -> str | None:
    """The single text value of a parameter; None (with a message) when there is none."""
    if isinstance(raw, str):
        return raw if raw.strip() else None
    if isinstance(raw, list | tuple) and all(isinstance(v, str) for v in raw):
        distinct = list(dict.fromkeys(raw))
        if len(distinct) > 1:
            ignored.append(f"ignored {key}: given {len(raw)} times with different values")
            return None
        return distinct[0] if distinct and distinct[0].strip() else None
    if isinstance(raw, int | float) and not isinstance(raw, bool):
        return number_text(raw) if isinstance(raw, float) else str(raw)
    ignored.append(f"ignored {key}: its value is not text")
    return None


def _fallback(parameter: Parameter) -> str:
    if parameter.default is None:
        return "left unset"
    if parameter.default == ():
        return "using the default (none)"
    codec = parameter.codec
    if isinstance(codec, Subset) and list(parameter.default) == list(codec.choices):
        return "using the default (all)"
    return f"using the default {parameter.codec.format(parameter.default)}"


# ---------------------------------------------------------------------------------------
# Links as URLs, saved plans and self-contained links.


def url(base: str, params: ParameterSet) -> str:
    """The full link to ``params`` on the dashboard at ``base`` (e.g. ``http://host:8501``).

    The landing page's links are ``/?…``: Streamlit serves the default page at ``/``,
    and its own path answers "page not found".
    """
    query = urlencode(encode(params), quote_via=quote, safe=",:")
    address = f"{base.rstrip('/')}/{type(params).page_path}"
    return f"{address}?{query}" if query else address


def saved_plan_url(base: str, plan_id: str) -> str:
    """The short link of a saved plan: ``BASE/?plan=ID``."""
    if not _PLAN_ID.match(plan_id):
        raise BadInput(f"{quoted(plan_id)} is not a saved plan id")
    return f"{base.rstrip('/')}/?{PLAN_KEY}={plan_id}"


def saved_params(params: ParameterSet) -> dict[str, str]:
    """What ``Store.save_plan`` stores for a plan: every parameter, defaults included."""
    return encode(params, include_defaults=True)


def self_contained(params: C, curve: Curve) -> C:
    """``params`` with ``curve``'s points and labels embedded in place of its id.

    Such a link opens on any server, whether or not it stores the curve. Raises BadInput
    when the curve has more points than a link carries.
    """
    return replace(  # type: ignore[type-var]
        params,
        curve=None,
        points=tuple(Point(p.batch, p.latency_ms) for p in curve.points),
        model=curve.model,
        card=curve.card,
        precision=curve.precision,
        resolution=curve.resolution,
    )


def linked_curve(params: EmbedsCurve) -> Curve | None:
    """The curve a self-contained link embeds, or None when the link names a stored one.

    Labels the link leaves out read "unnamed"; the curve's id follows from its labels and
    points, so a link to a stored curve's points finds that curve again.
    """
    if params.points is None:
        return None
    return make_curve(
        model=params.model or "unnamed model",
        card=params.card or "unnamed card",
        precision=params.precision,
        resolution=params.resolution,
        points=params.points,
        source="uploaded",
        environment={"notes": "embedded in a link"},
    )
