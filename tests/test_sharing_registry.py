"""A sharing mode is one object in one registry: a mode defined here, and nowhere else,
runs through the simulator, the recommendation, the deployment files and the command line;
a mode's settings are its own, validated by it; a name that is not registered is an error
everywhere."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from planner.cli import build_parser
from planner.curves.curve import Point
from planner.curves.fit import fit_curve
from planner.errors import BadInput
from planner.plan.deploy import deployment, write
from planner.plan.params import PlanParams, SimulateParams
from planner.plan.recommend import recommend
from planner.plan.request import Request
from planner.sim.ensemble import run_many
from planner.sim.scenario import MODES, Scenario, Sharing
from planner.sim.sharing import (
    SHARING_MODES,
    Isolation,
    ModeFile,
    MpsSettings,
    Settings,
    SharingMode,
    Target,
    offered_modes,
    register,
    sharing_mode,
    unregister,
)
from planner.sim.sharing.choice import sharing_for
from planner.sim.simulate import simulate

LAPTOP = "1:9.82,2:20.36,3:32.71,4:46.15,8:103.77,16:221.25"
POINTS = [Point(int(b), float(v)) for b, v in (p.split(":") for p in LAPTOP.split(","))]
TABLE = tuple(float(b) * 4.0 + 1.0 for b in range(1, 65))


class HalfSpeed(SharingMode):
    """A toy mode: every batch takes twice as long; one instance of the worker per card."""

    name = "half-speed"
    title = "half speed"
    isolation = Isolation(memory="toy memory isolation", fault="toy fault isolation")
    assumption = "Every batch takes twice as long as the curve says (a test's toy mode)."

    def table(
        self, table: np.ndarray, sharing: Sharing, peak_upto: int | None = None
    ) -> np.ndarray:
        return table * 2.0


@dataclass(frozen=True)
class SlowdownSettings(Settings):
    """How many times as long as the curve says every batch takes."""

    factor: float = 2.0

    def __post_init__(self) -> None:
        if not self.factor >= 1.0:
            raise BadInput(f"the slowdown factor must be at least 1, not {self.factor!r}")


class Slowdown(SharingMode[SlowdownSettings]):
    """A toy mode with a setting of its own, which it validates, and a file that applies
    it."""

    name = "slowdown"
    title = "slowdown"
    isolation = Isolation(memory="toy memory isolation", fault="toy fault isolation")
    assumption = "Every batch takes the factor times as long as the curve says (a toy mode)."
    settings = SlowdownSettings

    def label(self, sharing: Sharing) -> str:
        return f"slowdown x{self.settings_of(sharing).factor:g}"

    def table(
        self, table: np.ndarray, sharing: Sharing, peak_upto: int | None = None
    ) -> np.ndarray:
        return table * self.settings_of(sharing).factor

    def deploy_file(self, sharing: Sharing, target: Target) -> ModeFile:
        factor = self.settings_of(sharing).factor
        text = f"# {target.label}\nSLOWDOWN_FACTOR={factor:g}\n"
        return ModeFile("slowdown.env", text, self.assumption)


@pytest.fixture
def half_speed() -> Iterator[SharingMode]:
    mode = register(HalfSpeed())
    try:
        yield mode
    finally:
        unregister(mode.name)


@pytest.fixture
def slowdown() -> Iterator[SharingMode]:
    mode = register(Slowdown())
    try:
        yield mode
    finally:
        unregister(mode.name)


def test_the_registry_holds_the_built_in_modes_in_the_order_they_are_offered() -> None:
    assert list(SHARING_MODES) == ["exclusive", "time-slicing", "mps", "mig"]
    assert list(MODES) == list(SHARING_MODES)
    for name, mode in SHARING_MODES.items():
        assert mode.name == name and sharing_mode(name) is mode
        assert mode.isolation.memory and mode.isolation.fault and mode.assumption


def test_a_registered_mode_is_offered_and_an_unregistered_one_is_gone(half_speed) -> None:
    assert "half-speed" in MODES and list(MODES)[-1] == "half-speed"
    assert "half-speed" in offered_modes(None)
    assert sharing_for("half-speed") == Sharing(mode="half-speed")
    assert Sharing(mode="half-speed").label == "half speed"
    unregister("half-speed")
    try:
        assert "half-speed" not in MODES
        with pytest.raises(BadInput, match="'half-speed' is not one of"):
            Sharing(mode="half-speed")
    finally:
        register(half_speed)


def test_the_toy_mode_simulates_as_the_card_with_every_batch_twice_as_long(half_speed) -> None:
    toy = Scenario(latency_ms=TABLE, sessions=6, policy="batch-all", duration_s=3.0, seed=4,
                   sharing=Sharing(mode="half-speed"))  # fmt: skip
    doubled = Scenario(latency_ms=tuple(2.0 * v for v in TABLE), sessions=6,
                       policy="batch-all", duration_s=3.0, seed=4)  # fmt: skip
    expected = simulate(doubled).records
    for engine in ("fast", "reference"):
        got = simulate(toy, engine=engine).records
        assert np.array_equal(got.frame_latency, expected.frame_latency), engine
        assert np.array_equal(got.batch_size, expected.batch_size), engine
    many, alone = run_many([toy, doubled])
    assert np.array_equal(many.latency_ms, alone.latency_ms)


def test_the_toy_mode_is_planned_deployed_and_stated_like_any_other(half_speed) -> None:
    request = Request(
        curve=fit_curve(POINTS), policies=("oldest-first",), seeds=2, duration_s=5.0,
        max_sessions=6, sharings=(Sharing(), Sharing(mode="half-speed")),
    )  # fmt: skip
    result = recommend(request)
    by_mode = {o.mode: o for o in result.options}
    exclusive, toy = by_mode["exclusive"], by_mode["half-speed"]
    assert 1 <= toy.cap < exclusive.cap  # every batch twice as long holds fewer seats
    assert (toy.per_card, toy.seats_per_card, toy.derived) == (1, toy.cap, False)
    assert result.recommended is exclusive
    assert toy.as_dict()["isolation"] == {
        "memory": "toy memory isolation",
        "fault": "toy fault isolation",
    }
    assert f"half speed: {HalfSpeed.assumption}" in result.assumptions
    files = deployment(result, toy)
    assert [f.name for f in files] == ["worker.json"]  # the mode has no file of its own
    assert json.loads(files[0].text)["sharing"] == {"mode": "half-speed"}


def test_a_mode_validates_and_carries_its_own_settings(slowdown) -> None:
    assert Sharing(mode="slowdown").settings == SlowdownSettings(2.0)  # the mode's defaults
    tripled = Sharing.of("slowdown", factor=3.0)
    assert tripled == Sharing("slowdown", SlowdownSettings(3.0)) and tripled.label == "slowdown x3"
    assert Sharing.of(**tripled.as_dict()) == tripled
    with pytest.raises(BadInput, match="slowdown factor must be at least 1"):
        Sharing.of("slowdown", factor=0.5)
    with pytest.raises(BadInput, match="an MPS compute share applies to MPS only"):
        Sharing.of("slowdown", mps_share=50.0)
    with pytest.raises(BadInput, match="factor applies to slowdown only"):
        Sharing.of("mps", mps_share=50.0, factor=3.0)
    # Another mode's setting at its default is no setting at all (stored load tests name
    # every mode's settings); a name no mode has, or another mode's settings, is a bug.
    assert Sharing.of("slowdown", factor=3.0, mps_share=None, cotenants=()) == tripled
    with pytest.raises(TypeError, match="warp"):
        Sharing.of("slowdown", warp=1.0)
    with pytest.raises(TypeError, match="MpsSettings"):
        Sharing("slowdown", MpsSettings(50.0))


def test_a_mode_with_settings_simulates_plans_and_deploys_from_its_one_definition(
    slowdown, tmp_path: Path
) -> None:
    toy = Scenario(latency_ms=TABLE, sessions=6, policy="batch-all", duration_s=3.0, seed=4,
                   sharing=Sharing.of("slowdown", factor=3.0))  # fmt: skip
    tripled = Scenario(latency_ms=tuple(3.0 * v for v in TABLE), sessions=6,
                       policy="batch-all", duration_s=3.0, seed=4)  # fmt: skip
    assert np.array_equal(simulate(toy).records.frame_latency,
                          simulate(tripled).records.frame_latency)  # fmt: skip
    request = Request(
        curve=fit_curve(POINTS), policies=("oldest-first",), seeds=2, duration_s=5.0,
        max_sessions=6, sharings=(Sharing(), Sharing.of("slowdown", factor=3.0)),
    )  # fmt: skip
    result = recommend(request)
    toy_option = next(o for o in result.options if o.mode == "slowdown")
    files = deployment(result, toy_option)
    assert [(f.name, f.format) for f in files] == [("worker.json", "json"), ("slowdown.env", "env")]
    assert files[1].assumption == Slowdown.assumption
    written = write(files, tmp_path / "deploy")
    assert [p.name for p in written] == ["worker.json", "slowdown.env"]
    assert "SLOWDOWN_FACTOR=3\n" in (tmp_path / "deploy" / "slowdown.env").read_text()


def test_the_toy_mode_reaches_the_command_line(half_speed, cli) -> None:
    base = ("simulate", "--points", LAPTOP, "--sessions", "1", "--duration-s", "2", "--json")
    toy = cli(*base, "--mode", "half-speed")
    assert toy.status == 0, toy.err
    alone = cli(*base).json
    # One session, one frame at a time: every frame takes the batch-1 latency, twice over.
    assert toy.json["mode"] == "half-speed"
    assert toy.json["latency_ms"]["p99"] == pytest.approx(2.0 * alone["latency_ms"]["p99"])
    planned = cli("recommend", "--points", LAPTOP, "--policies", "oldest-first",
                  "--modes", "exclusive,half-speed", "--seeds", "2", "--max-sessions", "6",
                  "--json")  # fmt: skip
    assert planned.status == 0, planned.err
    options = {o["mode"]: o for o in planned.json["options"]}
    assert set(options) == {"exclusive", "half-speed"}
    assert options["half-speed"]["cap"] < options["exclusive"]["cap"]
    assert options["half-speed"]["isolation"]["fault"] == "toy fault isolation"


def test_the_toy_mode_is_a_link_parameter(half_speed) -> None:
    assert SimulateParams(points=tuple(POINTS), mode="half-speed").mode == "half-speed"
    assert PlanParams(points=tuple(POINTS), modes=("half-speed",)).modes == ("half-speed",)


def test_an_unknown_mode_is_an_error_everywhere(cli) -> None:
    with pytest.raises(BadInput, match="sharing mode 'warp' is not one of exclusive"):
        Sharing(mode="warp")
    with pytest.raises(BadInput, match="'warp' is not one of"):
        sharing_for("warp")
    with pytest.raises(BadInput, match="'warp' is not one of"):
        sharing_mode("warp")
    with pytest.raises(BadInput, match="mode"):
        SimulateParams(points=tuple(POINTS), mode="warp")
    with pytest.raises(BadInput, match="warp"):
        PlanParams(points=tuple(POINTS), modes=("exclusive", "warp"))
    simulated = cli("simulate", "--points", LAPTOP, "--sessions", "1", "--mode", "warp")
    assert simulated.status == 2 and "warp" in simulated.err
    planned = cli("recommend", "--points", LAPTOP, "--modes", "warp")
    assert planned.status == 2 and "warp" in planned.err


def test_the_parser_reads_the_registry_when_it_parses_not_when_it_is_built() -> None:
    parser = build_parser()
    mode = register(HalfSpeed())
    try:
        argv = ["simulate", "--points", LAPTOP, "--sessions", "1", "--mode", "half-speed"]
        assert parser.parse_args(argv).mode == "half-speed"
    finally:
        unregister(mode.name)
