"""The Study page's parameters: which stored study, which figure, over which axes."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from planner.links.parameters import ParameterSet, param


@dataclass(frozen=True)
class StudyParams(ParameterSet):
    """Everything the Study page takes: which stored study, which figure, over which two
    axes, and the values the other axes are held at (``AXIS=VALUE`` items)."""

    page_path: ClassVar[str] = "studies"

    study: str | None = param("study")
    metric: str = param("metric")
    x_axis: str | None = param("x_axis")
    y_axis: str | None = param("y_axis")
    hold: tuple[str, ...] = param("hold")

    @classmethod
    def conflicts(cls, values: Mapping[str, Any]) -> list[tuple[tuple[str, ...], str]]:
        return []
