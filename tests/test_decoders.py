"""The decode stage (SPEC §6.3): decoder engines before the CPU pre stage, in both engines."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any
from urllib.parse import parse_qs, urlsplit

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from streamlit.testing.v1 import AppTest

from planner.curves.cards import builtin_catalogue
from planner.curves.decoders import decoder_count
from planner.errors import BadInput
from planner.links.urls import decode, encode
from planner.plan.params import PlanParams
from planner.plan.resolve import plan_inputs
from planner.sim.arrivals import arrivals
from planner.sim.decode import Decoding, decoded_times, decoded_times_reference
from planner.sim.engine_fast import run_fast
from planner.sim.engine_reference import run_reference
from planner.sim.policies import POLICIES
from planner.sim.scenario import Scenario
from planner.sim.simulate import simulate
from planner.sim.stages import WorkerStages

from . import test_dashboard_pages as pages
from .simulation_cases import scenarios


@st.composite
def decodings(draw: st.DrawFn, scenario: Scenario) -> Decoding:
    engines = draw(st.one_of(st.integers(0, 4), st.none()))  # None: unknown, a delay
    codec = draw(st.sampled_from(["h264", "h265", "jpeg"]))
    if engines == 0 and scenario.stages.cpu_workers > 0:
        codec = "jpeg"  # a video stream on a finite pool of CPU threads is refused
    # From far below to far above what the engines can keep up with.
    return Decoding(decode_ms=draw(st.sampled_from([0.5, 3.0, 11.0, 40.0])), engines=engines,
                    codec=codec)  # fmt: skip


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_fast_engine_matches_reference_engine_exactly_with_decoders(data: st.DataObject) -> None:
    scenario = data.draw(scenarios(max_sessions=24, durations_s=(0.2, 0.5, 1.0)))
    scenario = scenario.with_(decode=data.draw(decodings(scenario)))
    assert run_fast(scenario).same_as(run_reference(scenario), tolerance_ms=1e-9) == []


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.integers(1, 12),
    st.sampled_from(list(POLICIES)),
    st.sampled_from(["h264", "jpeg"]),
    st.one_of(st.integers(1, 3), st.none()),
    st.sampled_from([0.5, 9.0, 40.0]),
    st.sampled_from([0.0, 1.5]),
    st.integers(0, 2**32),
)
def test_fast_engine_matches_reference_engine_with_decoders_when_every_frame_queues(
    sessions: int,
    policy: str,
    codec: str,
    engines: int | None,
    decode_ms: float,
    network_ms: float,
    seed: int,
) -> None:
    scenario = Scenario(
        latency_ms=tuple(1.0 + 0.5 * b for b in range(1, 65)),
        sessions=sessions,
        policy=policy,
        duration_s=0.5,
        seed=seed,
        queue="all",
        stages=WorkerStages(network_ms=network_ms, pre_ms=1.0, post_ms=0.5),
        decode=Decoding(decode_ms=decode_ms, engines=engines, codec=codec),
    )
    assert run_fast(scenario).same_as(run_reference(scenario), tolerance_ms=1e-9) == []


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data(), st.booleans(), st.sampled_from([0.0, 2.5]))
def test_compiled_decoders_match_the_event_by_event_ones(
    data: st.DataObject, replaces: bool, network: float
) -> None:
    scenario = data.draw(scenarios(max_sessions=24, durations_s=(0.2, 0.5)))
    decoding = Decoding(
        decode_ms=data.draw(st.sampled_from([1.0, 7.0, 33.0])), engines=data.draw(st.integers(1, 5))
    )
    a = arrivals(scenario)
    args = (decoding, a.times, a.start, network, scenario.duration_ms, replaces)
    np.testing.assert_array_equal(decoded_times(*args), decoded_times_reference(*args))


def _run(decoding: Decoding | None, sessions: int = 8, **changes: object) -> Scenario:
    table = tuple(0.5 + 0.01 * b for b in range(1, 65))
    return Scenario(latency_ms=table, sessions=sessions, duration_s=4.0, decode=decoding,
                    **changes)  # type: ignore[arg-type]  # fmt: skip


def test_video_decoders_carry_every_frame_and_bind_at_their_capacity() -> None:
    # 8 sessions at 30 fps offer 240 frames/s; two engines of 12.5 ms decode 160.
    decoding = Decoding(decode_ms=12.5, engines=2, codec="h264")
    r = run_fast(_run(decoding))
    served_per_s = r.delivered.sum() / 4.0
    assert served_per_s <= decoding.capacity_fps + 2  # a frame in flight at each end
    assert served_per_s >= 0.95 * decoding.capacity_fps
    assert r.overwritten.sum() == 0  # nothing is dropped before the GPU: it falls behind
    assert r.pending.sum() > 0.2 * r.arrived.sum()


def test_still_images_waiting_for_a_decoder_are_replaced_by_newer_ones() -> None:
    decoding = Decoding(decode_ms=12.5, engines=2, codec="jpeg")
    r = run_fast(_run(decoding))
    assert r.delivered.sum() / 4.0 <= decoding.capacity_fps + 2
    assert r.overwritten.sum() > 0.2 * r.arrived.sum()
    # Every frame still waiting at the end is the newest of its session, at most.
    assert (r.pending <= 2).all()


def test_decoders_that_keep_up_add_their_time_to_every_frame() -> None:
    plain = run_fast(_run(None, sessions=2))
    decoded = run_fast(_run(Decoding(decode_ms=3.0, engines=4), sessions=2))
    # The same frames, each 3 ms later at the GPU and back (the last may end after the run).
    assert plain.delivered.sum() - decoded.delivered.sum() in (0, 1, 2)
    plain_worker = {
        (s, k): done - at
        for s, k, done, at in zip(plain.frame_session, plain.frame_index, plain.frame_done,
                                  plain.frame_arrival, strict=True)
    }  # fmt: skip
    for s, k, done, at in zip(decoded.frame_session, decoded.frame_index, decoded.frame_done,
                              decoded.frame_arrival, strict=True):  # fmt: skip
        assert done - at == pytest.approx(plain_worker[(s, k)] + 3.0)


def test_decoding_on_the_cpu_is_pre_work_there() -> None:
    stages = WorkerStages(pre_ms=1.0, cpu_workers=2)
    on_cpu = _run(Decoding(decode_ms=4.0, engines=0, codec="jpeg"), stages=stages)
    as_pre = _run(None, stages=WorkerStages(pre_ms=5.0, cpu_workers=2))
    assert run_fast(on_cpu).same_as(run_fast(as_pre), tolerance_ms=0.0) == []
    # The CPU threads' figures count the decoding they do, as the plan's runs do.
    busy = simulate(on_cpu).cpu
    assert busy is not None and busy == simulate(as_pre).cpu


def test_a_video_stream_decoded_on_a_finite_pool_of_cpu_threads_is_refused() -> None:
    with pytest.raises(BadInput, match="not modelled"):
        _run(Decoding(decode_ms=4.0, engines=0, codec="h264"),
             stages=WorkerStages(cpu_workers=2))  # fmt: skip


@pytest.mark.parametrize(
    ("fields", "words"),
    [
        ({"decode_ms": -1.0}, "decode time"),
        ({"decode_ms": 2.0, "codec": "vp9"}, "codec 'vp9'"),
        ({"decode_ms": 2.0, "engines": -1}, "decoder count"),
    ],
)
def test_bad_decoding_is_refused_in_words(fields: dict[str, object], words: str) -> None:
    with pytest.raises(BadInput, match=words):
        Decoding(**fields)  # type: ignore[arg-type]


# -- the plan and the command line -----------------------------------------------------


def builtin_card(name: str) -> Any:
    return next(card for card in builtin_catalogue() if card.name == name)


FAST = ("--points", "1:0.5,8:1.0", "--policies", "oldest-first", "--seeds", "2",
        "--duration-s", "5")  # fmt: skip


def test_every_mig_profile_lists_its_decoders_and_one_without_decodes_on_the_cpu(
    cli: Any,
) -> None:
    said = cli("recommend", *FAST, "--card", "a100-40gb", "--modes", "mig", "--mig-profile",
               "all", "--decode-ms", "2", "--cpu-decode-ms", "6", "--json")  # fmt: skip
    assert said.status == 0, said.err
    note = next(a for a in said.json["assumptions"] if a.startswith("Decoding comes before"))
    for profile in builtin_card("a100-40gb").mig_profiles:
        count = decoder_count("a100-40gb", profile.name)
        assert count is not None
        if count.nvdec == 0:
            expected = f"MIG {profile.name}: no video decoder, so decoding runs on the CPU"
        else:
            plural = "" if count.nvdec == 1 else "s"
            expected = f"MIG {profile.name}: {count.nvdec} video decoder{plural} of 2 ms"
        assert expected in note
    assert "MIG 1g.5gb: no video decoder, so decoding runs on the CPU threads (6 ms" in note


def test_decoders_bind_when_they_cannot_decode_every_frame(cli: Any) -> None:
    decode_ms = 7.0
    gpu = cli("recommend", *FAST, "--card", "a100-40gb", "--min-fps", "30", "--json")
    assert gpu.status == 0, gpu.err
    gpu_cap = gpu.json["options"][0]["cap"]
    said = cli("recommend", *FAST, "--card", "a100-40gb", "--min-fps", "30",
               "--decode-ms", str(decode_ms), "--json")  # fmt: skip
    assert said.status == 0, said.err
    option = said.json["options"][0]
    engines = decoder_count("a100-40gb")
    assert engines is not None
    decoders_cap = math.floor(engines.nvdec * 1000 / decode_ms / 30)
    assert decoders_cap < gpu_cap  # the case this test is about
    assert option["cap"] == min(decoders_cap, gpu_cap)
    assert (
        "the video decoders are busy 100%: more GPU does not add a seat"
        in (option["binding_constraint"])
    )
    # More decoders lift the cap back towards the GPU's.
    more = cli("recommend", *FAST, "--card", "a100-40gb", "--min-fps", "30",
               "--decode-ms", str(decode_ms), "--decoders", "50", "--json")  # fmt: skip
    assert more.json["options"][0]["cap"] == gpu_cap


def test_a_plan_without_a_decode_time_has_no_decode_stage(cli: Any) -> None:
    plain = cli("recommend", *FAST, "--card", "a100-40gb", "--json").json
    again = cli("recommend", *FAST, "--card", "a100-40gb", "--codec", "h264", "--json").json
    assert plain["options"] == again["options"]
    assert not any(a.startswith("Decoding comes before") for a in plain["assumptions"])


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (("--decode-ms", "-2"), "--decode-ms"),
        (("--decode-ms", "2", "--codec", "vp9"), "--codec"),
        (("--decoders", "3"), "needs decode_ms"),
        (("--decoders", "0"), "needs cpu_decode_ms"),
        (("--decode-ms", "2", "--modes", "mig", "--mig-profile", "1g.5gb"), "cpu_decode_ms"),
    ],
)
def test_bad_decoder_input_exits_2_with_one_line(
    cli: Any, args: tuple[str, ...], words: str
) -> None:
    said = cli("recommend", *FAST, "--card", "a100-40gb", *args)
    assert said.status == 2
    assert words in said.err
    assert len(said.err.strip().splitlines()) == 1


# -- links ------------------------------------------------------------------------------


def test_the_command_line_links_the_decode_stage_and_the_link_plans_the_same(cli: Any) -> None:
    args = (*FAST, "--card", "a100-40gb", "--min-fps", "30", "--decode-ms", "7",
            "--decoders", "4", "--codec", "jpeg", "--cpu-decode-ms", "9")  # fmt: skip
    run = cli("link", *args)
    assert run.status == 0, run.err
    query = parse_qs(urlsplit(run.out.strip()).query)
    params, ignored = decode(PlanParams, query)
    assert ignored == []
    assert (params.decode_ms, params.decoders, params.codec, params.cpu_decode_ms) == (
        7.0, 4, "jpeg", 9.0,
    )  # fmt: skip
    assert encode(params) == encode(decode(PlanParams, encode(params))[0])
    # Reopened, the link plans what the command line planned.
    asked = cli("recommend", *args, "--json").json
    reopened = plan_inputs(params, None).request
    assert reopened.decoders is not None
    decoding = reopened.decoders.decoding(reopened.sharings[0])
    assert (decoding.engines, decoding.decode_ms, decoding.codec) == (4, 7.0, "jpeg")
    note = next(a for a in asked["assumptions"] if a.startswith("Decoding comes before"))
    assert "4 video decoders of 7 ms a frame" in note


def test_an_old_link_has_no_decode_stage_and_writes_none() -> None:
    params, ignored = decode(PlanParams, {"points": ["1:0.5,8:1.0"], "card": ["a100-40gb"]})
    assert ignored == []
    assert plan_inputs(params, None).request.decoders is None
    written = encode(params)
    assert not {"decode_ms", "decoders", "codec", "cpu_decode_ms"} & set(written)


def test_a_link_that_asks_for_what_is_not_modelled_says_what_it_ignored() -> None:
    link = {"points": ["1:0.5,8:1.0"], "cpu_decode_ms": ["5"], "cpu_workers": ["2"]}
    params, ignored = decode(PlanParams, link)
    assert len(ignored) == 1 and "not modelled" in ignored[0]
    assert params.cpu_decode_ms is None and params.cpu_workers == 0


def test_simulate_runs_the_decode_stage_and_refuses_what_it_needs_in_one_line(cli: Any) -> None:
    base = ("simulate", "--points", "1:0.5,8:1.0", "--card", "a100-40gb", "--sessions", "30",
            "--duration-s", "3", "--decode-ms", "7", "--json")  # fmt: skip
    engines = decoder_count("a100-40gb")
    assert engines is not None
    capacity = engines.nvdec * 1000 / 7.0
    short = cli(*base).json
    assert short["mean_fps"] * 30 <= capacity * 1.01  # the decoders' rate, shared out
    assert short["mean_fps"] < 30
    enough = cli(*base, "--decoders", "10").json
    assert enough["min_fps"] == 30
    said = cli(*base[:-3], "--decoders", "2")
    assert said.status == 2 and said.err.count("\n") == 1 and "--decoders" in said.err
    # The run names the decoders: falling behind at 30 sessions, keeping up with ten.
    text = cli(*base[:-1]).out
    assert "The video decoders are busy 100%: more GPU does not add a seat" in text
    assert f"decode at most {capacity:,.0f}" in text
    kept = cli(*base[:-1], "--decoders", "10").out
    assert "The video decoders were " in kept and "busy 100%" not in kept
    unknown = cli("simulate", "--points", "1:0.5,8:1.0", "--sessions", "2", "--duration-s",
                  "1", "--decode-ms", "7").out  # fmt: skip
    assert "decoding was taken as a delay of 7 ms a frame that never queues" in unknown


# -- the Plan page ----------------------------------------------------------------------


def test_the_plan_page_opens_the_decoders_of_a_link_and_its_controls_write_them(
    app: AppTest,
) -> None:
    first = next(c.id for c in pages.db().curves() if c.card == "server-24gb")
    plain_plan = PlanParams(curve=first, budget_ms=100.0, policies=("batch-all",), **pages.QUICK)
    decoded = replace(plain_plan, decode_ms=10.0, decoders=1, codec="h265")
    alone, bound = pages.expected(plain_plan), pages.expected(decoded)
    assert alone.recommended is not None and bound.recommended is not None
    assert bound.recommended.cap < alone.recommended.cap  # the decoders bind here
    pages.open_page(app, "plan.py", encode(decoded))
    assert pages.ignored(app) == []
    assert app.title[0].value == pages.headline_of(bound)
    assert "the video decoders are busy 100%" in "\n".join(m.value for m in app.markdown)
    assert app.number_input(key="plan_decode_ms").value == 10.0
    assert app.number_input(key="plan_decoders").value == 1
    assert app.selectbox(key="plan_codec").value == "h265"
    assert pages.query(app) == encode(decoded)  # the link round-trips
    # More decoders on the page go into the link, and the decoders no longer bind.
    app.number_input(key="plan_decoders").set_value(8)
    app.run()
    assert not app.exception
    got, problems = decode(PlanParams, pages.query(app))
    assert problems == [] and got.decoders == 8
    assert app.title[0].value == pages.headline_of(pages.expected(got))
    # Emptied, the decode time leaves no decode stage and the old link.
    app.number_input(key="plan_decode_ms").set_value(None)
    app.number_input(key="plan_decoders").set_value(None)
    app.selectbox(key="plan_codec").set_value("h264")
    app.run()
    assert not app.exception
    assert not {"decode_ms", "decoders", "codec"} & set(pages.query(app))


def test_mps_clients_share_the_cards_decoders_instead_of_each_having_them_all() -> None:
    """Under MPS every client sees the whole card, decoders included: four clients at a
    25% share decode together what the card's engines decode, not four times that."""
    from planner.plan.decoders import Decoders
    from planner.sim.scenario import Sharing
    from planner.sim.sharing import instances_per_card

    card = decoder_count("a100-40gb")
    assert card is not None and card.nvdec > 1
    decoders = Decoders(decode_ms=4.0, card="a100-40gb")
    whole = decoders.decoding(Sharing.of("exclusive"))
    assert whole.engines == card.nvdec
    for share in (25.0, 50.0, 10.0):
        mps = Sharing.of("mps", mps_share=share)
        clients = instances_per_card(mps)
        one = decoders.decoding(mps)
        assert clients * one.capacity_fps == pytest.approx(whole.capacity_fps)
        assert one.engines is not None and 1 <= one.engines <= card.nvdec
        assert one.decode_ms >= whole.decode_ms  # a shared engine is never faster
        assert f"shared by its {clients} clients" in decoders.sentence(mps)
    # A MIG instance has decoders of its own; the whole card's are one worker's.
    mig = Sharing.of("mig", mig_profile="3g.20gb", mig_slices=3, mig_total=7)
    assert decoders.decoding(mig).engines == 2


def test_jpeg_is_not_counted_on_the_video_decoders_unless_a_count_is_given() -> None:
    """The catalogue counts NVDEC engines; JPEG has engines of its own on most cards, so
    a JPEG stream's count is unknown (a delay, and said) until one is given."""
    from planner.plan.decoders import Decoders
    from planner.sim.scenario import Sharing

    exclusive = Sharing.of("exclusive")
    jpeg = Decoders(decode_ms=3.0, codec="jpeg", card="a100-40gb")
    assert not jpeg.decoding(exclusive).known
    assert "NVJPG" in jpeg.sentence(exclusive)
    counted = Decoders(decode_ms=3.0, codec="jpeg", card="a100-40gb", given=2)
    assert counted.decoding(exclusive).engines == 2
    assert Decoders(decode_ms=3.0, codec="h265", card="a100-40gb").decoding(exclusive).known


def test_an_mps_share_too_small_to_count_its_clients_still_shares_the_decoders() -> None:
    """A share of 5e-324% makes 100 / share overflow to infinity; the clients are then as
    many as an int holds, not an OverflowError when the decoders are shared out."""
    from planner.plan.decoders import Decoders
    from planner.sim.scenario import Sharing
    from planner.sim.sharing import instances_per_card

    tiny = Sharing.of("mps", mps_share=5e-324)
    assert instances_per_card(tiny) >= 10**18
    assert Decoders(decode_ms=1.0, cpu_decode_ms=1.0, given=1).decoding(tiny).engines == 1
