"""``planner bench``: the project's performance figures, each measured against a reference
in the same run, so a ratio means something on any machine.

A *section* is a function that measures one part of the product and returns named
figures (milliseconds, seconds, ratios, counts). Sections register themselves in
``SECTIONS``; ``run`` calls them in order and adds a description of the machine. Nothing
here asserts a target: the figures are for people (and ``docs/performance.md``). Each
section's figures end with the one-minute load average before and after it
(``load_before``, ``load_after``).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable
from typing import Any

from planner.measure.devices import host

Figures = dict[str, Any]
Section = Callable[[Callable[[str], None]], Figures]

SECTIONS: dict[str, Section] = {}


def section(name: str) -> Callable[[Section], Section]:
    """Register a benchmark section under ``name`` (the key in ``planner bench --json``)."""

    def register(fn: Section) -> Section:
        SECTIONS[name] = fn
        return fn

    return register


def best_of(fn: Callable[[], object], repeat: int = 5) -> float:
    """The shortest of ``repeat`` wall times of ``fn()``, in seconds (least disturbed run)."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def run(
    names: Iterable[str] | None = None, progress: Callable[[str], None] = lambda _m: None
) -> dict[str, Any]:
    """Run the named sections (default: all) and return their figures by section."""
    _load_sections()
    # Sections run in the order of BENCH_MODULES, whatever order they were imported in.
    rank = {module: i for i, module in enumerate(BENCH_MODULES)}
    ordered = sorted(SECTIONS, key=lambda name: rank.get(SECTIONS[name].__module__, len(rank)))
    wanted = list(names) if names else ordered
    unknown = [n for n in wanted if n not in SECTIONS]
    if unknown:
        from planner.errors import BadInput

        raise BadInput(
            f"unknown benchmark section(s) {', '.join(unknown)}; choose from {', '.join(SECTIONS)}"
        )
    results: dict[str, Any] = {"machine": host()}
    for name in wanted:
        progress(f"bench: {name} ...")
        before = _load_average()
        figures = SECTIONS[name](progress)
        # On a shared machine the load moves every wall time: each section says its own.
        results[name] = {**figures, "load_before": before, "load_after": _load_average()}
    return results


def _load_average() -> float | None:
    """The one-minute load average (None where the system does not report one)."""
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return None


def _load_sections() -> None:
    """Import the modules that define sections (kept lazy: they pull in heavy libraries)."""
    import importlib

    for module in BENCH_MODULES:
        importlib.import_module(module)


# Modules whose import registers a section, in the order the sections run.
BENCH_MODULES: tuple[str, ...] = (
    "planner.bench.fit_eval",
    "planner.bench.sim",
    "planner.bench.first_answer",
    "planner.bench.measure",
    "planner.bench.store",
    "planner.bench.study",
    "planner.bench.published",
)
