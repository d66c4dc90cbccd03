"""GPU Seat Planner: how many live camera sessions can one GPU hold?

The library behind the ``planner`` command and the dashboard. It stores measured batch
curves (batch size -> latency) in DuckDB, fits whole curves from sparse points with an
uncertainty band, simulates sessions under each scheduling policy and GPU sharing mode,
and recommends a seat cap. It never imports a user interface toolkit.

What a script may use is named in ``__all__`` and importable from here::

    from planner import Point, Request, fit_curve, recommend

    curve = fit_curve([Point(1, 8.0), Point(3, 20.0)])
    print(recommend(Request(curve=curve)).summary)

The names are loaded on first use, so ``import planner`` stays cheap (the command line
and the reference worker import only the parts they need). The package map and its
layers are in ``docs/architecture.md``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# Public name -> the module that defines it.
_EXPORTS: dict[str, str] = {
    # Curves: measured points, the card catalogue, and the fit to a whole curve.
    "Curve": "planner.curves.curve",
    "Point": "planner.curves.curve",
    "make_curve": "planner.curves.curve",
    "Card": "planner.curves.cards",
    "FittedCurve": "planner.curves.fit",
    "fit_curve": "planner.curves.fit",
    "read_files": "planner.curves.imports",
    # The simulator.
    "Scenario": "planner.sim.scenario",
    "Sharing": "planner.sim.scenario",
    "Results": "planner.sim.results",
    "simulate": "planner.sim.simulate",
    "sweep": "planner.sim.sweep",
    "POLICIES": "planner.sim.policies",
    # The plan.
    "Criteria": "planner.plan.request",
    "Request": "planner.plan.request",
    "Recommendation": "planner.plan.outcomes",
    "recommend": "planner.plan.recommend",
    "PlanParams": "planner.plan.params",
    "plan_inputs": "planner.plan.resolve",
    # The store.
    "Store": "planner.store.repository",
    # Errors a caller may catch.
    "PlannerError": "planner.errors",
    "BadInput": "planner.errors",
    "NotFound": "planner.errors",
    "StoreError": "planner.errors",
}

__all__ = [
    "POLICIES",
    "BadInput",
    "Card",
    "Criteria",
    "Curve",
    "FittedCurve",
    "NotFound",
    "PlanParams",
    "PlannerError",
    "Point",
    "Recommendation",
    "Request",
    "Results",
    "Scenario",
    "Sharing",
    "Store",
    "StoreError",
    "__version__",
    "fit_curve",
    "make_curve",
    "plan_inputs",
    "read_files",
    "recommend",
    "simulate",
    "sweep",
]


def __getattr__(name: str) -> Any:
    """Load a public name from its module the first time it is asked for."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'planner' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


if TYPE_CHECKING:  # what type checkers and editors see; at run time __getattr__ loads it
    from planner.curves.cards import Card
    from planner.curves.curve import Curve, Point, make_curve
    from planner.curves.fit import FittedCurve, fit_curve
    from planner.curves.imports import read_files
    from planner.errors import BadInput, NotFound, PlannerError, StoreError
    from planner.plan.outcomes import Recommendation
    from planner.plan.params import PlanParams
    from planner.plan.recommend import recommend
    from planner.plan.request import Criteria, Request
    from planner.plan.resolve import plan_inputs
    from planner.sim.policies import POLICIES
    from planner.sim.results import Results
    from planner.sim.scenario import Scenario, Sharing
    from planner.sim.simulate import simulate
    from planner.sim.sweep import sweep
    from planner.store.repository import Store
