"""The JSON Schema (draft 2020-12) of what ``planner COMMAND --json`` prints, for the
commands whose documents carry a plan's figures, and ``planner schema COMMAND`` to print
one.

The schemas are built here from a few parts so that one figure has one type everywhere:
seats per card and GPU counts are integers, money, milliseconds and fractions numbers,
and every figure that follows from a seat range is a span (``planner.spans``: ``X``,
``X_low`` and ``X_high``, all three of one type, or all three null). The tests check each
command's output against its schema.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from planner.spans import HIGH, LOW

DIALECT = "https://json-schema.org/draft/2020-12/schema"

INT: dict[str, Any] = {"type": "integer"}
NUM: dict[str, Any] = {"type": "number"}
STR: dict[str, Any] = {"type": "string"}
BOOL: dict[str, Any] = {"type": "boolean"}


def nullable(part: dict[str, Any]) -> dict[str, Any]:
    return {"anyOf": [part, {"type": "null"}]}


def array(items: dict[str, Any]) -> dict[str, Any]:
    return {"type": "array", "items": items}


def obj(properties: dict[str, Any]) -> dict[str, Any]:
    """An object with every one of ``properties`` (others may follow: a later planner
    may add keys, never change these)."""
    return {"type": "object", "properties": properties, "required": list(properties)}


def span(key: str, part: dict[str, Any], *, can_be_null: bool = False) -> dict[str, Any]:
    """A span's three keys (``key``, ``key_low``, ``key_high``) of one type."""
    each = nullable(part) if can_be_null else part
    return {key: each, key + LOW: each, key + HIGH: each}


SEATS = {**span("seats_per_card", INT), "seats": STR}

OPTION = obj({
    "policy": STR, "mode": STR, "sharing": STR, "derived": BOOL,
    "cap": INT, "cap_low": INT, "cap_high": INT, "seats_per_instance": STR,
    "instances_per_card": INT, **SEATS, "card_share": NUM,
    "binding_constraint": STR, "failures": array(STR), "extrapolated": BOOL,
    "percentile": nullable(NUM), "latency_ms_at_cap": nullable(NUM),
    "frames_at_cap": INT, "low_confidence": BOOL, "min_fps_at_cap": nullable(NUM),
})  # fmt: skip

FLEET = obj({
    "peak_sessions": nullable(INT), "headroom": NUM, **span("seats_per_card", INT),
    **span("gpus", INT, can_be_null=True), "price_per_hour": nullable(NUM),
    "card_share": NUM, **span("cost_per_seat_hour", NUM, can_be_null=True),
    **span("cost_per_hour", NUM, can_be_null=True),
})  # fmt: skip

RULE = obj({
    "rule": STR, "gpus": array(INT), **span("peak_gpus", INT), "gpu_hours": NUM,
    **span("gpu_hours_per_day", NUM), **span("cost_per_day", NUM, can_be_null=True),
    **span("cost_per_month", NUM, can_be_null=True), "mean_utilisation": nullable(NUM),
})  # fmt: skip

DEMAND_FLEET = obj({
    "profile": {"type": "object"}, **span("seats_per_card", INT), "headroom": NUM,
    "lead_time_min": NUM, "steps_ahead": INT, "repeats": BOOL, "needed_gpus": array(INT),
    "fixed": RULE, "autoscaled": RULE, "notes": array(STR),
})  # fmt: skip

FLEET_ROW = {
    **span("fixed_peak_gpus", INT, can_be_null=True),
    **span("fixed_cost_per_day", NUM, can_be_null=True),
    **span("autoscaled_peak_gpus", INT, can_be_null=True),
    **span("autoscaled_cost_per_day", NUM, can_be_null=True),
}
PEAK_ROW = {
    **span("gpus_for_peak", INT, can_be_null=True),
    **span("cost_per_seat_hour", NUM, can_be_null=True),
}

CARD = obj({
    "card": STR, "curve": STR, "precision": nullable(STR), "resolution": nullable(STR),
    **SEATS, "option": nullable(STR), "latency_ms_at_cap": nullable(NUM),
    "min_fps_at_cap": nullable(NUM), "price_per_hour": nullable(NUM), **PEAK_ROW,
    "measure_next": nullable(INT), "problems": array(STR),
})  # fmt: skip

CARD_COST = {
    **CARD,
    "properties": {
        **CARD["properties"], **FLEET_ROW,
        **span("autoscaled_gpu_hours_per_day", NUM, can_be_null=True),
    },
    "required": [*CARD["required"], *FLEET_ROW],
}  # fmt: skip

PLAN_SIDE = obj({
    "plan_id": nullable(STR), "curve": STR, **SEATS, "option": nullable(STR),
    "percentile": nullable(NUM), "latency_ms_at_cap": nullable(NUM),
    "min_fps_at_cap": nullable(NUM), **PEAK_ROW, "profile": nullable(STR), **FLEET_ROW,
    "problems": array(STR),
})  # fmt: skip

SCHEMAS: dict[str, dict[str, Any]] = {
    "recommend": obj({
        "recommended": nullable(OPTION), "summary": STR, "options": array(OPTION),
        "measure_next": nullable(INT), "measure_next_basis": STR, "fleet": nullable(FLEET),
        "assumptions": array(STR), "simulations": INT,
        "calibration": nullable({"type": "object"}),
    }),
    "compare-cards": obj({"model": STR, "curves": array(CARD)}),
    "compare-plans": obj({
        "a": PLAN_SIDE, "b": PLAN_SIDE,
        "inputs": array(obj({"name": STR, "a": STR, "b": STR, "differs": BOOL})),
        "differing": array(STR),
    }),
    "fleet": obj({
        "summary": STR, "option": nullable(STR), "fleet": nullable(DEMAND_FLEET),
        "options": array(obj({"option": STR, **SEATS, **FLEET_ROW,
                              **span("autoscaled_gpu_hours_per_day", NUM)})),
        "cards": nullable(array(CARD_COST)),
    }),
}  # fmt: skip
"""Each command's schema, by the command's name."""


def schema(command: str) -> dict[str, Any]:
    """The schema of ``planner COMMAND --json``'s document, with its dialect and title."""
    return {"$schema": DIALECT, "title": f"planner {command} --json", **SCHEMAS[command]}


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "schema",
        help="the JSON Schema of a command's --json output",
        description="Print the JSON Schema (draft 2020-12) of what `planner COMMAND --json` "
        "prints: " + ", ".join(SCHEMAS) + ".",
    )
    parser.add_argument("command", choices=sorted(SCHEMAS), help="the command")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    print(json.dumps(schema(args.command), indent=2))
    return 0
