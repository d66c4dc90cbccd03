"""The library calls the pages repeat, cached on their inputs (per server process).

Changing one control reruns the whole page; these keep the simulations of every plan
someone looked at recently, so going back to a value, or another user opening the same
link, costs no simulation. ``st.cache_data`` hands every caller its own copy of the
result, so no session can change what another one sees; each cache is bounded.

The key of each call is the ``repr`` of its frozen inputs: a request or scenario holds
only plain values, and a fitted curve's ``repr`` names the points it is computed from
(deterministically), so equal keys mean equal results.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import streamlit as st

from planner.recommend import Recommendation, Request, fleet, option_sweep, recommend
from planner.results import Results
from planner.scenario import Scenario, Sharing
from planner.simulate import simulate
from planner.sweep import PoolCache, Pooled

ENTRIES = 64


@st.cache_resource(show_spinner=False)
def runs() -> PoolCache:
    """Pooled simulation runs shared by every session of this server: a plan that changes
    only its criteria (budget, floor) re-judges these instead of simulating again. The
    entries are immutable results of deterministic runs, so sharing them shares no one's
    choices."""
    return PoolCache()


@st.cache_data(max_entries=ENTRIES, show_spinner=False)
def _recommendation(key: str, _request: Request) -> Recommendation:
    return recommend(_request, runs())


def recommendation(request: Request) -> Recommendation:
    """``planner.recommend.recommend(request)``, cached.

    The peak demand, headroom and price change no simulation, only the fleet arithmetic, so
    the cached result is computed without them and its fleet sized afterwards: typing a
    price does not simulate anything again.
    """
    bare = _unsized(request)
    result = _recommendation(repr(bare), bare)
    sized = fleet(
        result.recommended,
        peak_sessions=request.peak_sessions,
        headroom=request.headroom,
        price_per_hour=request.price_per_hour,
    )
    return replace(result, request=request, fleet=sized)


@st.cache_data(max_entries=ENTRIES, show_spinner=False)
def _sweep(
    key: str, _result: Recommendation, _sharing: Sharing, _sessions: tuple[int, ...]
) -> list[Pooled]:
    return option_sweep(_result.request, _sharing, _sessions, _result.options, runs())


def sweep(result: Recommendation, sharing: Sharing, sessions: Sequence[int]) -> list[Pooled]:
    """``planner.recommend.option_sweep`` for a recommendation's request, reusing the runs
    the recommendation made; cached."""
    counts = tuple(sessions)
    request = _unsized(result.request)
    return _sweep(repr((request, sharing, counts)), result, sharing, counts)


def _unsized(request: Request) -> Request:
    """The request without what only sizes the fleet (peak, headroom, price): the part of
    it that decides what is simulated, as the caches' key."""
    return replace(request, peak_sessions=None, headroom=0.0, price_per_hour=None)


@st.cache_data(max_entries=16, show_spinner=False)
def _simulation(key: str, _scenario: Scenario) -> Results:
    return simulate(_scenario)


def simulation(scenario: Scenario) -> Results:
    """``planner.simulate.simulate(scenario)``, cached (a few entries: results carry
    every frame)."""
    return _simulation(repr(scenario), scenario)
