"""The repository's own load tests as cases of the validation corpus (SPEC §6.2,
``docs/accuracy.md``): the reference worker's (``planner loadtest``) and the Triton test
server's (``planner loadtest --target``, ``scripts/accuracy_triton.py``).

A case is one policy of one load test that searched its seat cap on the worker or the
server (``--find-cap``): the curve the load test measured first (its points with their
spread, and a server's per-request cost and batcher settings), the scenarios it served
(``LoadTestOptions``), the CPU work it measured, the criteria, and the cap it measured.
The planner's answer is the one the accuracy report gives before any calibration
(``planner.validate.accuracy.predicted_cap``: the recommendation itself, on the same
scenarios, a server's as a server that queues every frame), so a case predicts here what
it predicted there.

Each case keeps the command that made it, when and on what it ran (with the load average,
which on a shared machine moves the measured cap), and where the repository publishes its
figures; ``scripts/own_runs.py`` writes them from load-test stores.

All runs of one machine's worker are one system, and so are all runs of the Triton test
server, whatever its batcher or model speed: judged leave-one-system-out, a Triton case is
judged by a margin fitted without any Triton run.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from planner.curves.curve import BATCHER_KEY, PER_REQUEST_KEY, Curve, Point
from planner.errors import BadInput
from planner.plan.request import Criteria
from planner.units import Milliseconds
from planner.validate.options import LoadTestOptions
from planner.validate.runs import SERVER_SOURCE, LoadTest

OWN_CORPUS = Path(__file__).resolve().parents[2] / "tests" / "data" / "own_runs"
"""Where a source checkout keeps the repository's own cases (with the tests)."""
REQUIRED = ("system", "setting", "policy", "command", "published_in", "measured_at")


@dataclass(frozen=True)
class OwnCase:
    """One policy's seat cap measured by one of the repository's own load tests."""

    system: str  # "reference worker on …" or "Triton test server on …": one system each
    setting: str  # what sets this case apart within its system (batcher, model, policy)
    policy: str
    command: str  # the command that made the load test
    published_in: str  # the script that runs such load tests and publishes their figures
    measured_at: str  # UTC, when the load test started
    source: str  # "measured" (the reference worker) or "server"
    points: tuple[Point, ...]
    curve_environment: dict[str, Any]  # a server's per-request cost and batcher settings
    options: LoadTestOptions
    pre_ms: Milliseconds
    post_ms: Milliseconds
    budget_ms: Milliseconds
    percentile: float
    min_fps: float
    measured: int
    searched_to: int
    load_average: tuple[float, float] | None = None  # 1-minute, at the start and the end

    @property
    def system_key(self) -> str:
        return f"own {self.system}"

    @property
    def label(self) -> str:
        return f"{self.system_key}, {self.setting}"

    @property
    def streams(self) -> int:
        """The cap measured: sessions held, as the published cases' stream count."""
        return self.measured

    def sources(self) -> tuple[str, ...]:
        return (self.command, self.published_in)

    def criteria(self) -> Criteria:
        return Criteria(budget_ms=self.budget_ms, percentile=self.percentile,
                        min_fps=self.min_fps)  # fmt: skip

    def loadtest(self) -> LoadTest:
        """The load test as far as its prediction needs it (no runs)."""
        curve = Curve(model="case", card="case", precision=None, resolution=None,
                      points=self.points, environment=self.curve_environment)  # fmt: skip
        return LoadTest(curve=curve, options=self.options, runs=(), pre_ms=self.pre_ms,
                        post_ms=self.post_ms, source=self.source)  # fmt: skip

    def answer(self) -> tuple[int, int, int]:
        """The planner's uncalibrated cap (cap, band low, band high), as the accuracy
        report predicts it."""
        from planner.validate.accuracy import predicted_cap

        return predicted_cap(self.loadtest(), self.policy, self.criteria(), self.searched_to)

    def as_dict(self) -> dict[str, Any]:
        return {
            "system": self.system,
            "setting": self.setting,
            "policy": self.policy,
            "command": self.command,
            "published_in": self.published_in,
            "measured_at": self.measured_at,
            "load_average": None if self.load_average is None else list(self.load_average),
            "source": self.source,
            "points": [p.as_dict() for p in self.points],
            "curve_environment": self.curve_environment,
            "options": self.options.as_dict(),
            "pre_ms": self.pre_ms,
            "post_ms": self.post_ms,
            "budget_ms": self.budget_ms,
            "percentile": self.percentile,
            "min_fps": self.min_fps,
            "measured": self.measured,
            "searched_to": self.searched_to,
        }


def from_dict(entry: dict[str, Any]) -> OwnCase:
    """A case as ``as_dict`` wrote it; BadInput when it lacks its source."""
    missing = [n for n in REQUIRED if not entry.get(n)]
    if missing:
        raise BadInput(f"an own case lacks its source: {', '.join(missing)}")
    load = entry.get("load_average")
    return OwnCase(
        system=entry["system"],
        setting=entry["setting"],
        policy=entry["policy"],
        command=entry["command"],
        published_in=entry["published_in"],
        measured_at=entry["measured_at"],
        load_average=None if load is None else (float(load[0]), float(load[1])),
        source=entry["source"],
        points=tuple(Point(**p) for p in entry["points"]),
        curve_environment=dict(entry.get("curve_environment") or {}),
        options=LoadTestOptions.from_dict(entry["options"]),
        pre_ms=float(entry["pre_ms"]),
        post_ms=float(entry["post_ms"]),
        budget_ms=float(entry["budget_ms"]),
        percentile=float(entry["percentile"]),
        min_fps=float(entry["min_fps"]),
        measured=int(entry["measured"]),
        searched_to=int(entry["searched_to"]),
    )


def load_own(folder: Path = OWN_CORPUS) -> tuple[OwnCase, ...]:
    """The repository's own cases; none where the folder has no ``cases.json``."""
    path = folder / "cases.json"
    if not path.exists():
        return ()
    return tuple(from_dict(e) for e in json.loads(path.read_text())["cases"])


def from_loadtest(
    test: LoadTest, system: str, setting: str, published_in: str, criteria: Criteria
) -> list[OwnCase]:
    """A stored load test's cases: one per policy whose cap it searched."""
    env = test.environment
    starts = [env.get("load_average_start"), env.get("load_average_end")]
    load = (
        (float(starts[0][0]), float(starts[1][0]))  # type: ignore[index]
        if all(isinstance(s, list) and s for s in starts)
        else None
    )
    keep = {k: v for k, v in test.curve.environment.items() if k in (PER_REQUEST_KEY, BATCHER_KEY)}
    out = []
    for cap in test.caps:
        out.append(
            OwnCase(
                system=system,
                setting=f"{setting}{'; ' if setting else ''}{cap.policy}",
                policy=cap.policy,
                command=shown_command(str(env.get("command", ""))),
                published_in=published_in,
                measured_at=str(env.get("started_at", "")),
                load_average=load,
                source=test.source,
                points=test.curve.points,
                curve_environment=keep,
                options=test.options,
                pre_ms=test.pre_ms,
                post_ms=test.post_ms,
                budget_ms=criteria.budget_ms,
                percentile=criteria.percentile,
                min_fps=criteria.min_fps,
                measured=cap.measured,
                searched_to=cap.largest,
            )
        )
    return out


def is_server(case: OwnCase) -> bool:
    return case.source == SERVER_SOURCE


def shown_command(command: str) -> str:
    """The stored command without what only the machine it ran on knew: its store file,
    the server's address and where the report went."""
    words = shlex.split(command)
    out: list[str] = []
    skip = False
    for i, word in enumerate(words):
        if skip:
            skip = False
            continue
        if word == "--db" and i + 1 < len(words):
            skip = True
            continue
        if out and out[-1] == "--report":
            word = "FILE"
        out.append(re.sub(r"^(grpc|https?)://[^/]+", r"\1://HOST:PORT", word))
    return shlex.join(out)
