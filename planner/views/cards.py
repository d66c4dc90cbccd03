"""A card comparison's view: what the Compare page and ``planner compare-cards`` show of
one model's curves planned on every card (``planner.plan.compare_cards``).

``card_comparison_view`` writes each curve's cells once — the card, the option and its
seats, GPUs for the peak, cost per seat-hour, the latency and the slowest session at the
cap, the card's price and the batch to measure next — and lays them out as the two
tables the front ends show: the page's, of the curves that could be planned, with what a
narrow screen must keep in view first; and the command's, of every curve compared.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from planner import display
from planner.curves.curve import Curve
from planner.plan.compare_cards import CardPlan
from planner.plan.params import CompareParams
from planner.spans import from_fields
from planner.views.table import Table

NOTHING_FITS = "nothing fits"
"""The option cell of a curve on which no option holds a single session."""


@dataclass(frozen=True)
class CardComparisonView:
    """The comparison's tables: ``table``, the page's, one row per curve that could be
    planned; ``every_curve``, the command's, one row per curve compared."""

    table: Table
    every_curve: Table


def flag_mark(curve: Curve) -> str:
    """A short mark for a flagged curve (``⚠ drift check failed``), empty otherwise."""
    if not curve.flag:
        return ""
    return "⚠ " + curve.flag.split(":")[0]


def card_comparison_view(plans: Sequence[CardPlan], params: CompareParams) -> CardComparisonView:
    """The view of ``plans``, compared under ``params``."""
    latency = f"p{params.percentile:g}"
    page = []
    command = []
    for plan in plans:
        doc = plan.as_dict()
        option = doc["option"] or NOTHING_FITS
        gpus = display.span(from_fields(doc, "gpus_for_peak"))
        cost = display.span(from_fields(doc, "cost_per_seat_hour"), display.money)
        at_cap = display.ms(doc["latency_ms_at_cap"], unit=False)
        slowest = display.fps(doc["min_fps_at_cap"], unit=False)
        price = display.money(doc["price_per_hour"])
        measure = doc["measure_next"]
        command.append(
            {
                "card": doc["card"],
                "precision": doc["precision"] or "-",
                "resolution": doc["resolution"] or "-",
                "seats per card": doc["seats"],
                "with": option,
                f"{latency} ms at cap": at_cap,
                "min fps": slowest,
                "per card-hour": price,
                "per seat-hour": cost,
                "GPUs for peak": gpus,
                "measure next": display.MISSING if measure is None else str(measure),
            }
        )
        if plan.result is None:
            continue
        mark = flag_mark(plan.curve)
        row = {
            "card": doc["card"] + (f" ({mark})" if mark else ""),
            "option": option,
            "seats per card": doc["seats"],
        }
        if params.peak_sessions is not None:
            row["GPUs for peak"] = gpus
        row["cost per seat-hour"] = cost
        row.update(
            {
                "precision": doc["precision"] or "-",
                "resolution": doc["resolution"] or "-",
                f"{latency} latency at cap (ms)": at_cap,
                "slowest session at cap (fps)": slowest,
                "price per card-hour": price,
                "measure next": display.MISSING if measure is None else f"batch {measure}",
            }
        )
        page.append(row)
    return CardComparisonView(Table.of(page), Table.of(command))
