"""Small Streamlit helpers shared by the pages: messages that survive a rerun, and
widget values set by an action for the next run.

Both live in the user's own ``st.session_state``, so nothing one user does reaches
another user's session.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

import streamlit as st

from planner.curves.curve import Curve
from planner.curves.imports.base import capped
from planner.errors import NotFound
from planner.plan.resolve import default_curve
from planner.store.repository import Store
from planner.text import md, md_list
from planner.views.work import OverBudget

Kind = Literal["success", "info", "warning", "error"]
_FLASH = "_flash"
_PENDING = "_pending"
FORGET = object()


def flash(kind: Kind, markdown: str) -> None:
    """Show ``markdown`` at the top of the page on the next run (after ``st.rerun``).

    The caller escapes any user text in it with ``planner.text.md``.
    """
    st.session_state.setdefault(_FLASH, []).append((kind, markdown))


def show_flash() -> None:
    """Show, once, the messages ``flash`` left for this run."""
    for kind, markdown in st.session_state.pop(_FLASH, []):
        getattr(st, kind)(markdown)


def set_next_run(**values: Any) -> None:
    """Set widget values at the start of the next run, before the widgets exist.

    Streamlit forbids changing a widget's value after it was drawn in the same run; an
    action (Save, Delete) that wants another selection records it here and reruns.
    ``FORGET`` removes a widget's state, so it starts again from its default.
    """
    st.session_state.setdefault(_PENDING, {}).update(values)


def apply_next_run() -> None:
    """Apply what ``set_next_run`` recorded; call at the top of a page."""
    for key, value in st.session_state.pop(_PENDING, {}).items():
        if value is FORGET:
            st.session_state.pop(key, None)
        else:
            st.session_state[key] = value


def show_problems(title: str, problems: Iterable[str]) -> None:
    """An error box: a bold title, then each problem as a literal bullet; past the first
    fifty, one bullet counts the rest by kind (``capped``)."""
    st.error(f"**{title}**\n\n{md_list(capped(problems))}")


def table(rows: Sequence[Mapping[str, Any]], *, key: str, **options: Any) -> None:
    """A read-only table in a container keyed ``key``, so tests can find it by key
    (a read-only ``st.dataframe`` does not carry its own key)."""
    with st.container(key=key):
        st.dataframe(rows, hide_index=True, **options)


def static_table(rows: Sequence[Mapping[str, Any]], *, key: str) -> None:
    """A table that fits the page: every row shown (no scrolling box), long text wrapped
    inside its cell, the first columns first on a narrow screen. For tables a reader
    reads across rather than sorts. ``st.table`` renders its cells as Markdown, so every
    cell and header goes through ``md`` and is shown literally."""
    if not rows:
        return
    shown = [{md(k): md("" if v is None else v) for k, v in row.items()} for row in rows]
    with st.container(key=key):
        st.table(shown, hide_index=True, border="horizontal")


def default_curve_or_stop(db: Store, title: str, doing: str) -> Curve:
    """The store's default curve; when the store holds none, the page says so under its
    ``title`` (what there is no curve ``doing``: "to plan with") and stops."""
    try:
        return default_curve(db)
    except NotFound as exc:
        st.title(title)
        show_problems(f"There is no curve {doing}:", [*exc.problems, "Add one on the Curves page."])
        st.stop()
        raise  # pragma: no cover - st.stop() does not return


def _sentence(text: str) -> str:
    """``text`` as a sentence of its own: a capital first letter and a full stop."""
    return text[:1].upper() + text[1:] + ("" if text.endswith(".") else ".")


def show_over_budget(exc: OverBudget, what: str, command: Sequence[str]) -> None:
    """Say plainly that ``what`` (a plan, a simulation) is over this server's computation
    budget, what to change, and the command line that runs it without one."""
    st.warning(
        f"**This {what} is over this server's computation budget.** {_sentence(exc.problems[0])} "
        "Ask for less work (under *Simulation effort*: fewer random draws, shorter runs, "
        "a smaller largest session count), or run it from the command line, which has no "
        "such budget:",
        icon=":material/hourglass_disabled:",
    )
    st.code(shlex.join(command), language="bash", wrap_lines=True)
