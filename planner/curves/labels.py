"""Labels that tell curves apart where their own labels are the same: a Model Analyzer
table gives one curve per model configuration, all of one model on one card."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from planner.curves.curve import Curve


def config_label(curve: Curve) -> str:
    """The curve's label, with its model configuration where the import recorded one
    (``unet34 on t4, config unet34_config_3``)."""
    config = curve.environment.get("model_config")
    return f"{curve.label}, config {config}" if config else curve.label


def distinct_labels(curves: Sequence[Curve]) -> dict[str, str]:
    """A label per curve id: ``config_label``, and the id added where that still repeats."""
    base = {c.id: config_label(c) for c in curves}
    counts = Counter(base.values())
    return {i: f"{label} ({i})" if counts[label] > 1 else label for i, label in base.items()}


def points_text(count: int) -> str:
    """``1 point``, ``6 points``."""
    return f"{count} point" if count == 1 else f"{count} points"
