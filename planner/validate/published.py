"""The validation corpus of published multi-stream results, and the uncalibrated range's
margin derived from it (SPEC §6.2, ``docs/accuracy.md``).

A case is one system's one benchmark from the legacy multi-stream scenario of MLPerf
Inference (closed division, v0.7 and v1.0): N streams, a query of N frames every frame
period (50 ms, or 66.7 ms for SSD-ResNet34), the 99th-percentile query latency within the
period; N is the published cap. The same submission publishes, for the same system,
benchmark and engine, a single-stream 90th-percentile latency and an offline throughput.
Every figure keeps the repository, commit and file it was read from
(``scripts/published_multistream.py`` builds ``tests/data/published_multistream``).

The curve given to the planner (``Case.points``) is built from those two figures only:
batch 1 at the single-stream p90 latency, and the offline throughput as a large-batch
point, at the batch B = max(2, ceil(throughput x period)) that fills one frame period at
the offline rate, with latency B / throughput. The planner then answers the scenario with
its own recommendation (``Case.request``): batch-all (a query's frames are one batch),
aligned phases (every stream's frame arrives at once), the period's frame rate, the period
as the p99 budget, no overhead, a frame-rate floor of 99% of the source rate (the
scenario lets 1% of queries overrun).

The margin (``derive``): for a factor m, a case's uncalibrated range is
[floor(m x cap), max(cap, band high)]. The band's own low edge is left out of this
judgement on purpose: a curve of two points has a band many times wider than a measured
curve's, and a margin that leaned on it would not protect a user whose curve has eight
points. m is a lower bound of the published / predicted ratios, exp(mean - k x sd) of
their logarithms; every system is judged with m fitted on the others only
(leave-one-system-out), and k is the smallest on a grid that makes the ranges contain the
published cap in at least ``COVERAGE`` of the cases with no range above it (a miss may only
be low: the range below the published count). The margin shipped is that rule fitted on
every case.

The corpus also holds the repository's own load tests (``planner.validate.own_runs``: the
reference worker's and the Triton test server's seat caps, measured): ``corpus`` is both.
A measured cap of 0 (not one session held: on the Triton test server, a p99 over its
budget at one session, which a busy shared machine can cause) has no logarithm and is not
a fraction of any cap: no factor m < 1 brings floor(m x cap) to 0 unless it also empties
every small range. Such a case is predicted and reported, but its ratio does not enter
the fit of m, it has no relative error, and where its range lies above 0 its verdict is
``none held``, counted apart: the rule (coverage, misses only low) is judged on the cases
that held at least one session. Only a load test shows a server that holds none.
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from planner.curves.curve import Point
from planner.curves.fit import fit_curve
from planner.errors import BadInput
from planner.plan.margin import low_end
from planner.plan.outcomes import Option
from planner.plan.recommend import recommend
from planner.plan.request import Criteria, Request
from planner.units import FramesPerSecond, Milliseconds
from planner.validate.own_runs import OwnCase, load_own

CORPUS = Path(__file__).resolve().parents[2] / "tests" / "data" / "published_multistream"
"""Where a source checkout keeps the corpus (it ships with the tests, not the wheel)."""
SOURCE_FIELDS = ("multistream_file", "single_stream_file", "offline_file")
COVERAGE = 0.9
"""The share of cases whose uncalibrated range must contain the published cap."""
K_GRID = tuple(i / 4 for i in range(0, 17))
"""The widths tried, in standard deviations of the log ratio below its mean: 0 to 4."""
FLOOR_SHARE = 0.99
"""The frame-rate floor as a share of the source rate: the scenario lets 1% of queries
overrun their period."""
NONE_HELD = "none held"
"""The verdict on a measured cap of 0 that the whole range lies above."""
DURATION_S = 1.0
"""Simulated seconds per run: phases are aligned and batch times do not spread, so every
period repeats the first (20 or 15 of them)."""


@dataclass(frozen=True)
class Case:
    """One published multi-stream result with the two figures its curve is built from."""

    repository: str
    version: str
    commit: str
    submitter: str
    system: str
    benchmark: str
    accelerator: str
    streams: int
    target_ms: Milliseconds
    single_stream_p90_ms: Milliseconds
    offline_samples_per_s: float
    multistream_file: str
    single_stream_file: str
    offline_file: str
    system_file: str = ""

    @property
    def system_key(self) -> str:
        """The published system a case belongs to: a submission's system in one version."""
        return f"v{self.version} {self.submitter} {self.system}"

    @property
    def label(self) -> str:
        return f"{self.system_key} {self.benchmark}"

    @property
    def fps(self) -> FramesPerSecond:
        return 1000.0 / self.target_ms

    @property
    def large_batch(self) -> int:
        """The batch that fills one frame period at the offline rate (at least 2)."""
        return max(2, math.ceil(self.offline_samples_per_s * self.target_ms / 1000.0 - 1e-9))

    @property
    def points(self) -> tuple[Point, Point]:
        """The curve given to the planner (see the module docstring)."""
        b = self.large_batch
        return (
            Point(1, self.single_stream_p90_ms),
            Point(b, 1000.0 * b / self.offline_samples_per_s),
        )

    def sources(self) -> tuple[str, ...]:
        """Where each figure comes from: ``repository@commit:file``."""
        return tuple(
            f"{self.repository}@{self.commit[:12]}:{getattr(self, name)}" for name in SOURCE_FIELDS
        )

    def answer(self) -> tuple[int, int, int]:
        """The planner's uncalibrated cap (cap, band low, band high) on its own
        recommendation path."""
        option: Option = recommend(self.request()).options[0]
        return option.cap, option.cap_low, option.cap_high

    def request(self) -> Request:
        """The scenario as a plan: see the module docstring. No margin: the corpus judges
        the model itself."""
        return Request(
            curve=fit_curve(self.points),
            criteria=Criteria(
                budget_ms=self.target_ms,
                percentile=99.0,
                min_fps=FLOOR_SHARE * self.fps,
                overhead_ms=0.0,
            ),
            policies=("batch-all",),
            seeds=1,
            duration_s=DURATION_S,
            fps=self.fps,
            phases="aligned",
            spread=False,
        )


AnyCase = Case | OwnCase


@dataclass(frozen=True)
class Predicted:
    """A case and the planner's uncalibrated answer to it."""

    case: AnyCase
    cap: int
    band_low: int
    band_high: int

    @property
    def ratio(self) -> float:
        """Published over predicted cap."""
        return self.case.streams / max(self.cap, 1)

    @property
    def error(self) -> float | None:
        """(predicted - published) / published: positive where the model over-promised;
        None where the measured cap is 0."""
        if self.case.streams == 0:
            return None
        return (self.cap - self.case.streams) / self.case.streams

    def range_with(self, m: float) -> tuple[int, int]:
        """The uncalibrated range under margin ``m`` without the band's low edge (see the
        module docstring); ``planner.plan.margin.low_end`` is the same rule."""
        return low_end(self.cap, self.cap, m), max(self.cap, self.band_high)

    def judged(self, m: float) -> str:
        """``inside``, ``low`` (the range below the published cap), ``high`` (above it),
        or ``none held`` (a measured cap of 0 above which the whole range lies: see the
        module docstring)."""
        low, high = self.range_with(m)
        if self.case.streams < low:
            return NONE_HELD if self.case.streams == 0 else "high"
        return "low" if self.case.streams > high else "inside"


@dataclass(frozen=True)
class Derivation:
    """The margin's derivation: the width ``k`` chosen, the margin ``m`` fitted on every
    case, and the leave-one-system-out judgement of each case with ``held_out[i]`` the m
    it was judged with."""

    k: float
    m: float
    predicted: tuple[Predicted, ...]
    held_out: tuple[float, ...]
    verdicts: tuple[str, ...]

    @property
    def judged(self) -> int:
        """The cases the rule judges: every case but those that held no session."""
        return len(self.verdicts) - self.none_held

    @property
    def coverage(self) -> float:
        return self.verdicts.count("inside") / max(self.judged, 1)

    @property
    def none_held(self) -> int:
        return self.verdicts.count(NONE_HELD)

    @property
    def misses_high(self) -> int:
        return self.verdicts.count("high")

    @property
    def misses_low(self) -> int:
        return self.verdicts.count("low")


def load(folder: Path = CORPUS) -> tuple[Case, ...]:
    """The corpus's cases (BadInput when the folder has none, or a case lacks a source)."""
    path = folder / "cases.json"
    try:
        raw = json.loads(path.read_text())
    except FileNotFoundError:
        raise BadInput(f"no published corpus at {path} (it ships with a source checkout)") from None
    cases = tuple(_case(entry) for entry in raw["cases"])
    if not cases:
        raise BadInput(f"{path} holds no cases")
    return cases


def _case(entry: dict[str, Any]) -> Case:
    missing = [n for n in ("repository", "commit", *SOURCE_FIELDS) if not entry.get(n)]
    if missing:
        raise BadInput(f"a published case lacks its source: {', '.join(missing)}")
    names = Case.__dataclass_fields__
    return Case(**{k: v for k, v in entry.items() if k in names})


def corpus() -> tuple[AnyCase, ...]:
    """The whole corpus: the published cases, then the repository's own."""
    return (*load(), *load_own())


def predict(case: AnyCase) -> Predicted:
    """The planner's uncalibrated answer to one case, on its own recommendation path."""
    return Predicted(case, *case.answer())


def lower_bound(ratios: Sequence[float], k: float) -> float:
    """exp(mean - k x sd) of the ratios' logarithms: the rule's margin on ``ratios`` (a
    ratio of 0, a measured cap of 0, has no logarithm and is left out)."""
    logs = [math.log(r) for r in ratios if r > 0]
    return math.exp(statistics.fmean(logs) - k * statistics.stdev(logs))


def judge(predicted: Sequence[Predicted], k: float) -> tuple[list[float], list[str]]:
    """Every case judged with m fitted on the other systems' cases only."""
    margins, verdicts = [], []
    for p in predicted:
        others = [q.ratio for q in predicted if q.case.system_key != p.case.system_key]
        m = lower_bound(others, k)
        margins.append(m)
        verdicts.append(p.judged(m))
    return margins, verdicts


def derive(predicted: Sequence[Predicted]) -> Derivation:
    """The smallest margin that meets the corpus's test (see the module docstring);
    BadInput when no width on the grid meets it."""
    for k in K_GRID:
        margins, verdicts = judge(predicted, k)
        inside = verdicts.count("inside") / max(len(verdicts) - verdicts.count(NONE_HELD), 1)
        if inside >= COVERAGE and "high" not in verdicts:
            return Derivation(
                k=k,
                m=lower_bound([p.ratio for p in predicted], k),
                predicted=tuple(predicted),
                held_out=tuple(margins),
                verdicts=tuple(verdicts),
            )
    raise BadInput("no margin on the grid keeps the published caps inside their ranges")


def predict_all(
    cases: Sequence[AnyCase], progress: Callable[[str], None] = lambda _m: None
) -> tuple[Predicted, ...]:
    """Every case's prediction, in order."""
    out = []
    for i, case in enumerate(cases, 1):
        progress(f"published: {i}/{len(cases)} {case.label}")
        out.append(predict(case))
    return tuple(out)
