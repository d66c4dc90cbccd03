"""The parts the ``--json`` schemas (``planner.cli.schema``) are built from: one type per
kind of figure, and objects whose keys are all required (others may follow)."""

from __future__ import annotations

from typing import Any

from planner.spans import HIGH, LOW

INT: dict[str, Any] = {"type": "integer"}
NUM: dict[str, Any] = {"type": "number"}
STR: dict[str, Any] = {"type": "string"}
BOOL: dict[str, Any] = {"type": "boolean"}
OBJECT: dict[str, Any] = {"type": "object"}
"""An object whose keys the planner does not fix (a curve's environment, a section)."""


def nullable(part: dict[str, Any]) -> dict[str, Any]:
    return {"anyOf": [part, {"type": "null"}]}


def array(items: dict[str, Any]) -> dict[str, Any]:
    return {"type": "array", "items": items}


def obj(properties: dict[str, Any]) -> dict[str, Any]:
    """An object with every one of ``properties`` (others may follow: a later planner
    may add keys, never change these)."""
    return {"type": "object", "properties": properties, "required": list(properties)}


def with_optional(part: dict[str, Any], optional: dict[str, Any]) -> dict[str, Any]:
    """``part`` with ``optional`` keys that are typed where present."""
    return {**part, "properties": {**part["properties"], **optional}}


def span(key: str, part: dict[str, Any], *, can_be_null: bool = False) -> dict[str, Any]:
    """A span's three keys (``key``, ``key_low``, ``key_high``) of one type."""
    each = nullable(part) if can_be_null else part
    return {key: each, key + LOW: each, key + HIGH: each}
