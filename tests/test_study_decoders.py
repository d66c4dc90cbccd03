"""A study's axes over the decode stage (SPEC §5.4, §6.3): the decoder count and the decode
time per frame vary like any plan parameter, each cell the plan of its values; ``"none"``
and ``"card"`` leave them unset, the very cells of a study without those axes."""

from __future__ import annotations

from typing import Any

import pytest

from planner.errors import BadInput
from planner.links.urls import decode
from planner.plan.decoders import BUSY_REASON
from planner.plan.params import PlanParams
from planner.plan.recommend import recommend
from planner.plan.resolve import plan_inputs
from planner.store.repository import Store
from planner.studies.run import run_study
from planner.studies.store import load_study
from planner.studies.study import cells, study_from_dict
from planner.studies.view import axes, axis_words

QUICK: dict[str, Any] = {"seeds": 1, "duration_s": 2, "policies": "batch-all", "budget_ms": 60}


def _raw(name: str, fixed: dict[str, Any] | None = None, **axes: Any) -> dict[str, Any]:
    return {
        "name": name,
        "curves": {"filters": [{"model": "ball-detector", "card": "server-24gb"}]},
        "fixed": {**QUICK, **(fixed or {})},
        "axes": axes,
    }


def test_each_decoder_count_is_the_plan_with_those_decoders(store: Store) -> None:
    # 30 ms a frame on each engine at 30 fps a stream: each engine decodes about one
    # stream, so the decoders bind before this card's GPU does.
    study = study_from_dict(_raw("decoders", {"decode_ms": 30}, decoders=[1, 2]))
    assert study_from_dict(study.as_dict()) == study  # stored and read back the same
    assert [c.params.decoders for c in cells(store, study)] == [1, 2]
    run_study(store, study, workers=1)
    _study, members = load_study(store, "decoders")
    caps, reasons = {}, {}
    for member in members:
        assert member.result is not None and member.result.status == "ok"
        params, ignored = decode(PlanParams, member.params)
        assert ignored == [] and params.decode_ms == 30
        alone = recommend(plan_inputs(params, store).request)
        assert alone.recommended is not None
        assert member.result.outputs["cap"] == alone.recommended.cap
        count = member.coordinates["decoders"]
        caps[count] = member.result.outputs["cap"]
        reasons[count] = member.result.outputs["binding_constraint"] or ""
    assert caps[1] < caps[2]  # a second engine decodes a second stream
    assert BUSY_REASON in reasons[1], reasons
    assert axes(members)["decoders"] == ["1", "2"]
    assert axis_words("decoders") == "video decoders"
    assert axis_words("decode_ms") == "decode time per frame on a video decoder (ms)"


def test_none_and_card_leave_the_decode_stage_as_a_study_without_it(store: Store) -> None:
    plain = cells(store, study_from_dict(_raw("plain")))
    study = study_from_dict(_raw("decode", decode_ms=["none", 30]))
    assert study_from_dict(study.as_dict()) == study
    without, with_decoding = cells(store, study)
    assert without.params.decode_ms is None and with_decoding.params.decode_ms == 30
    # The "none" cell is the cell of the study without the axis: computed once for both.
    assert without.key == plain[0].key
    assert with_decoding.key != plain[0].key
    run_study(store, study_from_dict(_raw("plain")), workers=1)
    summary = run_study(store, study, workers=1)
    assert (summary.cells, summary.skipped, summary.computed) == (2, 1, 1)
    _study, members = load_study(store, "decode")
    assert axes(members)["decode_ms"] == ["none", "30"]
    # "card": the catalogue's count, the cell of a study that leaves decoders out.
    by_card = cells(store, study_from_dict(_raw("c", {"decode_ms": 30}, decoders=["card", 1])))
    fixed_only = cells(store, study_from_dict(_raw("f", {"decode_ms": 30})))
    assert by_card[0].params.decoders is None and by_card[0].key == fixed_only[0].key
    assert by_card[1].params.decoders == 1 and by_card[1].key != fixed_only[0].key


def test_a_count_without_its_time_fails_that_cell_with_why(store: Store) -> None:
    first, second = cells(store, study_from_dict(_raw("x", decoders=[0, 2])))
    assert first.problems and "cpu_decode_ms" in " ".join(first.problems)
    assert second.problems and "decode_ms" in " ".join(second.problems)


@pytest.mark.parametrize(
    ("axis", "values", "message"),
    [
        ("decoders", ["all"], "axes.decoders[1]"),
        ("decoders", ["none"], "axes.decoders[1]"),
        ("decoders", [2, 2], "axes.decoders: a value is listed twice"),
        ("decode_ms", [-1], "axes.decode_ms[1]"),
        ("decode_ms", ["card"], "axes.decode_ms[1]"),
        ("codec", ["av1"], "axes.codec[1]"),
    ],
)
def test_a_bad_decoder_axis_is_named(axis: str, values: list[Any], message: str) -> None:
    with pytest.raises(BadInput) as caught:
        study_from_dict(_raw("bad", **{axis: values}))
    assert any(message in p for p in caught.value.problems), caught.value.problems
