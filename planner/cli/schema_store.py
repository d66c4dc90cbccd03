"""The ``--json`` schemas of the commands that list, show and store what the store holds:
cards, curves and demand profiles (``planner.cli.schema`` collects them)."""

from __future__ import annotations

from typing import Any

from planner.cli.schema_parts import BOOL, INT, NUM, OBJECT, STR, array, nullable, obj

MIG_PROFILE = obj({
    "name": STR, "slices": INT, "memory_gb": nullable(NUM), "max_instances": nullable(INT),
})  # fmt: skip

CARD = obj({
    "name": STR, "memory_gb": nullable(NUM), "description": STR, "mig": BOOL,
    "mig_slices": nullable(INT), "mig_profiles": array(MIG_PROFILE),
    "price_per_hour": nullable(NUM), "builtin": BOOL,
})  # fmt: skip

CURVE_SUMMARY = obj({
    "id": STR, "model": STR, "card": STR, "precision": nullable(STR),
    "resolution": nullable(STR), "mig_profile": nullable(STR), "source": STR,
    "created_at": nullable(STR), "n_points": INT, "batches": array(INT),
    "flag": nullable(STR), "renamed_from": nullable(STR),
})  # fmt: skip
"""One curve as ``planner curves list --json`` lists it."""

POINT = {
    **obj({"batch": INT, "latency_ms": NUM}),
    "properties": {
        "batch": INT, "latency_ms": NUM, "p10_ms": NUM, "p50_ms": NUM, "p90_ms": NUM,
        "p99_ms": NUM, "std_ms": NUM, "n": INT, "memory_mb": NUM,
    },
}  # fmt: skip
"""A measured point: batch and latency, and the spread and memory only where measured."""

CURVE = {
    **CURVE_SUMMARY,
    "properties": {**CURVE_SUMMARY["properties"], "environment": OBJECT,
                   "points": {**array(POINT), "minItems": 1}},
    "required": [*CURVE_SUMMARY["required"], "environment", "points"],
}  # fmt: skip
"""Everything about one curve (``planner curves show --json``)."""

PROFILE_FIELDS: dict[str, Any] = {
    "name": STR, "source": STR, "step_minutes": NUM, "start": nullable(STR), "repeats": BOOL,
    "peak_sessions": NUM, "description": STR,
}  # fmt: skip
PROFILE = obj({**PROFILE_FIELDS, "sessions": array(NUM)})

SCHEMAS: dict[str, dict[str, Any]] = {
    "cards list": array(CARD),
    "cards set-price": CARD,
    "curves list": array(CURVE_SUMMARY),
    "curves show": CURVE,
    "curves import": array(CURVE),
    "curves rename": CURVE,
    "profiles list": obj({
        "built_in": array(obj({"name": STR, "description": STR})),
        "stored": array(obj(PROFILE_FIELDS)),
    }),
    "profiles show": PROFILE,
    "profiles add": PROFILE,
}  # fmt: skip
