"""A page's parameters in the URL: read when a link opens the page, written on every run.

The URL is the page's state for sharing; the widgets are its state while someone works.
``opened`` tells a page whether its URL is news (a link was opened, or the page was
entered from the sidebar) and returns the parameters to load into the widgets, with one
message listing what was ignored. ``publish`` writes the parameters the widgets now hold
back into the URL, in the same canonical form ``planner link`` prints (``encode``), so a
copied address bar and a printed link agree.

Both keep their bookkeeping in the user's own ``st.session_state``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Generic, TypeVar
from urllib.parse import urlsplit

import streamlit as st

from planner.errors import BadInput, NotFound
from planner.links.parameters import ParameterSet
from planner.links.urls import PLAN_KEY, decode, encode
from planner.store.repository import Store
from planner.text import md_list

P = TypeVar("P", bound=ParameterSet)
QueryKey = tuple[tuple[str, tuple[str, ...]], ...]
DEFAULT_BASE = "http://localhost:8501"


@dataclass(frozen=True)
class Opened(Generic[P]):
    """Parameters that came with the URL, and what of it was ignored."""

    params: P
    ignored: list[str]


def _query() -> dict[str, list[str]]:
    return {key: st.query_params.get_all(key) for key in st.query_params}


def _key(query: Mapping[str, list[str] | str]) -> QueryKey:
    return tuple(sorted((k, (v,) if isinstance(v, str) else tuple(v)) for k, v in query.items()))


def _slot(cls: type[ParameterSet]) -> str:
    return f"_link_{cls.__name__}"


def opened(
    cls: type[P],
    *,
    load_plan: Callable[[str], Mapping[str, Any]] | None = None,
    check: Callable[[P], tuple[P, list[str]]] | None = None,
) -> Opened[P] | None:
    """The parameters to load into the page's widgets, or None when the widgets hold them.

    None on a rerun of the page (the URL is what ``publish`` wrote last). When the URL is
    new, its parameters are decoded (never failing; see ``planner.links.urls.decode``) and
    ``check`` may reset what does not fit this server (an unknown curve id); when the page
    is entered without parameters after the user worked on it, their last parameters
    come back. ``load_plan`` reads ``plan=ID``.
    """
    query = _query()
    seen = st.session_state.get(_slot(cls))
    if seen is not None and seen["query"] == _key(query):
        return None
    if not query and seen is not None:
        return Opened(seen["params"], [])
    params, ignored = decode(cls, query, load_plan=load_plan)
    if check is not None:
        params, more = check(params)
        ignored = [*ignored, *more]
    st.session_state[_slot(cls)] = {"query": None, "params": params, "plan": None}
    if (
        load_plan is not None
        and PLAN_KEY in query
        and not any(m.startswith(f"ignored {PLAN_KEY}") for m in ignored)
    ):
        # Keep the short link in the address bar while the page shows the saved plan
        # itself (not the saved plan with other parameters laid over it).
        plan_id = query[PLAN_KEY][0].strip().lower()
        saved, _ = decode(cls, {PLAN_KEY: plan_id}, load_plan=load_plan)
        st.session_state[_slot(cls)]["plan"] = (plan_id, saved)
    return Opened(params, ignored)


def curve_check(
    store: Store, resolve: Callable[[Any, Store], object], what: str
) -> Callable[[P], tuple[P, list[str]]]:
    """A ``check`` for ``opened``: an unknown curve id falls back to the default curve, and
    parameters that do not go together (``resolve(params, store)`` raises) to the
    defaults; ``what`` names them in the message ("plan", "scenario")."""

    def check(params: P) -> tuple[P, list[str]]:
        ignored = []
        curve = getattr(params, "curve", None)
        if curve is not None:
            try:
                store.curve(curve)
            except NotFound:
                ignored.append(
                    f"ignored curve={curve!r}: no stored curve has that id; using the default curve"
                )
                params = replace(params, curve=None)  # type: ignore[type-var]
        try:
            resolve(params, store)
        except (BadInput, NotFound) as exc:
            ignored.append(f"ignored the {what}: {'; '.join(exc.problems)}; using the defaults")
            params = type(params)()
        return params, ignored

    return check


def show_ignored(ignored: list[str]) -> None:
    """One warning box listing what a link asked for that the page could not use."""
    if ignored:
        st.warning(
            "**Parts of this link were ignored; the page uses its defaults for them.**\n\n"
            + md_list(ignored),
            icon=":material/link_off:",
        )


def remember_plan(cls: type[P], plan_id: str, params: P) -> None:
    """Show ``?plan=ID`` in the address bar for as long as the page holds ``params``."""
    slot = st.session_state.setdefault(_slot(cls), {"query": None, "params": params})
    slot["plan"] = (plan_id, params)


def saved_plan(cls: type[P]) -> tuple[str, P] | None:
    """The saved plan (id, parameters) the page opened or saved last, while it shows it."""
    slot = st.session_state.get(_slot(cls))
    return None if slot is None else slot.get("plan")


def publish(params: P, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """Write ``params`` into the URL (only when it changes) and remember them; returns
    the query written. A saved plan's short id is kept while the parameters match it.
    ``extra`` adds the page's view settings (``ParameterSet.views``) beside them."""
    cls = type(params)
    slot = st.session_state.setdefault(_slot(cls), {"query": None, "params": params})
    saved = slot.get("plan")
    query = {PLAN_KEY: saved[0]} if saved is not None and saved[1] == params else encode(params)
    query.update({k: v for k, v in (extra or {}).items() if k in cls.views})
    if saved is not None and saved[1] != params:
        slot["plan"] = None
    if _key(_query()) != _key(query):
        st.query_params.from_dict(query)
    slot["query"] = _key(query)
    slot["params"] = params
    return query


def base_url() -> str:
    """The dashboard's root address as the browser sees it (``http://host:port/prefix``),
    for links shown to copy; ``DEFAULT_BASE`` where the browser's address is unknown."""
    try:
        current = st.context.url
    except Exception:  # pragma: no cover - outside a script run
        current = None
    if not current:
        return DEFAULT_BASE
    parts = urlsplit(current)
    prefix = str(st.get_option("server.baseUrlPath") or "").strip("/")
    root = f"{parts.scheme}://{parts.netloc}"
    return f"{root}/{prefix}" if prefix else root
