"""Names for the units the planner works in, so signatures say what a number means."""

from typing import TypeAlias

Milliseconds: TypeAlias = float
Microseconds: TypeAlias = float
Seconds: TypeAlias = float
FramesPerSecond: TypeAlias = float
Megabytes: TypeAlias = float
UsdPerHour: TypeAlias = float
