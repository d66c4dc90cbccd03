"""The library calls the pages repeat, cached on their inputs (per server process), and
run under the server's computation budget.

Changing one control reruns the whole page; these keep the simulations of every plan
someone looked at recently, so going back to a value, or another user opening the same
link, costs no simulation. Results are immutable values (frozen dataclasses; the
simulation's arrays are only read), so every session gets the same object; each cache
is a bounded least-recently-used table.

The key of each call is the ``repr`` of its frozen inputs: a request or scenario holds
only plain values, and a fitted curve's ``repr`` names the points it is computed from
(deterministically), so equal keys mean equal results.

Every computation runs under a ``planner.sim.work.Work`` (``working()``): a frame budget, turns
shared with the other visitors, and a progress bar whose updates between chunks are
where Streamlit stops work nobody waits for any more (a newer rerun of the page, or a
closed tab): updating an element checks for that, and raises out of the library.
"""

from __future__ import annotations

import contextlib
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from typing import Generic, TypeVar

import numpy as np
import streamlit as st

from planner.plan.outcomes import Recommendation, fleet
from planner.plan.recommend import option_sweep, recommend
from planner.plan.request import Request
from planner.views.runs import PoolCache, Pooled, Results, Scenario, Sharing, simulate_charged
from planner.views.work import Work

V = TypeVar("V")


SIMULATION_CACHE_BYTES = 256 * 2**20
"""The most the cached simulations' records may take together: one large run carries
hundreds of megabytes of per-frame records."""


class _Table(Generic[V]):
    """A bounded, thread-safe least-recently-used table: at most ``size`` entries and,
    with ``weigh``, at most ``max_bytes`` of them in all (a value heavier than that on its
    own is returned but not kept)."""

    def __init__(
        self,
        size: int,
        max_bytes: float = float("inf"),
        weigh: Callable[[V], int] = lambda _v: 0,
    ) -> None:
        self._size = size
        self._max_bytes = max_bytes
        self._weigh = weigh
        self._entries: OrderedDict[str, tuple[V, int]] = OrderedDict()
        self._lock = threading.Lock()

    @property
    def bytes(self) -> int:
        """What the kept entries weigh together."""
        with self._lock:
            return sum(weight for _value, weight in self._entries.values())

    def __len__(self) -> int:
        return len(self._entries)

    def get_or_make(self, key: str, make: Callable[[], V]) -> V:
        with self._lock:
            if key in self._entries:
                self._entries.move_to_end(key)
                return self._entries[key][0]
        value = make()  # outside the lock: other keys are served meanwhile
        weight = self._weigh(value)
        if weight > self._max_bytes:
            return value
        with self._lock:
            self._entries[key] = (value, weight)
            total = sum(w for _v, w in self._entries.values())
            while len(self._entries) > self._size or total > self._max_bytes:
                _key, (_value, gone) = self._entries.popitem(last=False)
                total -= gone
        return value


def results_bytes(results: Results) -> int:
    """What a simulation's records take in memory (their arrays)."""
    records = results.records
    return sum(int(v.nbytes) for v in vars(records).values() if isinstance(v, np.ndarray))


@st.cache_resource(show_spinner=False)
def runs() -> PoolCache:
    """Pooled simulation runs shared by every session of this server: a plan that changes
    only its criteria (budget, floor) re-judges these instead of simulating again. The
    entries are immutable results of deterministic runs, so sharing them shares no one's
    choices."""
    return PoolCache()


@st.cache_resource(show_spinner=False)
def _tables() -> dict[str, _Table[object]]:
    return {
        "recommendation": _Table(64),
        "sweep": _Table(64),
        "simulation": _Table(16, SIMULATION_CACHE_BYTES, results_bytes),  # type: ignore[arg-type]
    }


@contextmanager
def working(what: str) -> Iterator[Work]:
    """A ``Work`` for one computation of this page, shown as a progress bar that says
    ``what`` is being simulated (against the budget) while it runs."""
    bar = st.empty()

    def show(current: Work) -> None:
        share = min(current.done / current.budget, 1.0)
        bar.progress(share, text=f"{what}: {current.done / 1e6:,.1f} million frames simulated")

    try:
        yield Work(on_chunk=show)
    finally:
        with contextlib.suppress(Exception):  # the page may be stopping
            bar.empty()


def recommendation(request: Request, account: Work | None = None) -> Recommendation:
    """``planner.plan.recommend.recommend(request)``, cached, under ``account``'s budget.

    The peak demand, headroom and price change no simulation, only the fleet arithmetic, so
    the cached result is computed without them and its fleet sized afterwards: typing a
    price does not simulate anything again. Raises ``planner.sim.work.OverBudget``.
    """
    bare = _unsized(request)
    result: Recommendation = _tables()["recommendation"].get_or_make(  # type: ignore[assignment]
        repr(bare), lambda: recommend(bare, runs(), account or Work())
    )
    sized = fleet(
        result.recommended,
        peak_sessions=request.peak_sessions,
        headroom=request.headroom,
        price_per_hour=request.price_per_hour,
    )
    return replace(result, request=request, fleet=sized)


def sweep(
    result: Recommendation,
    sharing: Sharing,
    sessions: Sequence[int] | Mapping[str, Sequence[int]],
    account: Work | None = None,
) -> list[Pooled]:
    """``planner.plan.recommend.option_sweep`` for a recommendation's request, reusing the runs
    the recommendation made; cached, under ``account``'s budget."""
    counts = (
        tuple(sorted((p, tuple(c)) for p, c in sessions.items()))
        if isinstance(sessions, Mapping)
        else tuple(sessions)
    )
    request = _unsized(result.request)
    rows: list[Pooled] = _tables()["sweep"].get_or_make(  # type: ignore[assignment]
        repr((request, sharing, counts)),
        lambda: option_sweep(
            result.request, sharing, sessions, result.options, runs(), account or Work()
        ),
    )
    return rows


def _unsized(request: Request) -> Request:
    """The request without what only sizes the fleet (peak, headroom, price): the part of
    it that decides what is simulated, as the caches' key."""
    return replace(request, peak_sessions=None, headroom=0.0, price_per_hour=None)


def simulation(scenario: Scenario, account: Work | None = None) -> Results:
    """``planner.sim.simulate.simulate(scenario)``, cached (a few entries, at most
    ``SIMULATION_CACHE_BYTES`` of records: results carry every frame), admitted against
    ``account``'s budget (one run is one chunk)."""

    def run() -> Results:
        return simulate_charged(scenario, account or Work())

    found: Results = _tables()["simulation"].get_or_make(repr(scenario), run)  # type: ignore[assignment]
    return found
