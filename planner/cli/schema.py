"""The JSON Schema (draft 2020-12) of what ``planner COMMAND --json`` prints, for every
command that has ``--json``, and ``planner schema COMMAND`` to print one.

The plan documents' schemas are built here, the store's (cards, curves, profiles) in
``planner.cli.schema_store`` and the runs' (fit, simulate, measure, loadtest, study,
bench) and a plan's hand-offs (link, deploy, report) in ``planner.cli.schema_runs``, all
from the parts in ``planner.cli.schema_parts`` so that one figure has one type everywhere:
seats per card and GPU counts are integers, money, milliseconds and fractions numbers,
and every figure that follows from a seat range is a span (``planner.spans``: ``X``,
``X_low`` and ``X_high``, all three of one type, or all three null). The tests check each
command's output against its schema.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from planner.cli import schema_runs, schema_store
from planner.cli.schema_parts import BOOL, INT, NUM, STR, array, nullable, obj, span
from planner.errors import BadInput
from planner.links.codecs import quoted

DIALECT = "https://json-schema.org/draft/2020-12/schema"

SEATS = {**span("seats_per_card", INT), "seats": STR}

OPTION = obj({
    "policy": STR, "mode": STR, "sharing": STR, "derived": BOOL,
    "cap": INT, "cap_low": INT, "cap_high": INT, "band_cap_low": INT, "band_cap_high": INT,
    "uncalibrated_margin": nullable(NUM), "seats_per_instance": STR,
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

PLAN_SCHEMAS: dict[str, dict[str, Any]] = {
    "recommend": obj({
        "recommended": nullable(OPTION), "summary": STR, "options": array(OPTION),
        "measure_next": nullable(INT), "measure_next_basis": STR, "fleet": nullable(FLEET),
        "assumptions": array(STR), "simulations": INT,
        "calibration": nullable({"type": "object"}), "margin": nullable(INT),
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

SCHEMAS: dict[str, dict[str, Any]] = dict(
    sorted({**schema_store.SCHEMAS, **PLAN_SCHEMAS, **schema_runs.SCHEMAS}.items())
)
"""Each command's schema, by the command's name: a sub-command's name is the command's
and the action's with a space (``curves list``); ``loadtest`` is the run, and
``loadtest import``, ``list`` and ``show`` its actions."""


def schema(command: str) -> dict[str, Any]:
    """The schema of ``planner COMMAND --json``'s document, with its dialect and title."""
    if command not in SCHEMAS:
        raise BadInput(
            f"no command {quoted(command)} prints --json; choose from {', '.join(SCHEMAS)}"
        )
    return {"$schema": DIALECT, "title": f"planner {command} --json", **SCHEMAS[command]}


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "schema",
        help="the JSON Schema of a command's --json output",
        description="Print the JSON Schema (draft 2020-12) of what `planner COMMAND --json` "
        "prints, for every command that has --json: " + ", ".join(SCHEMAS) + ". A "
        "sub-command is named with its action, e.g. `planner schema curves list`.",
    )
    parser.add_argument(
        "command", nargs="+", metavar="COMMAND", help="the command, and its action if it has one"
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    print(json.dumps(schema(" ".join(args.command)), indent=2))
    return 0
