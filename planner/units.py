"""Names for the units the planner works in, so signatures say what a number means."""

import math
from typing import TypeAlias

Milliseconds: TypeAlias = float
Microseconds: TypeAlias = float
Seconds: TypeAlias = float
FramesPerSecond: TypeAlias = float
Megabytes: TypeAlias = float
UsdPerHour: TypeAlias = float


def is_finite(value: object) -> bool:
    """Whether ``value`` is a finite real number (an int or float, not a bool)."""
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
