"""``planner link``: the share URL of a plan given as ``planner recommend`` options, and
``planner measure`` commands built back from measurement options."""

from __future__ import annotations

import shlex
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from planner.cli import build_parser
from planner.cli.measure import options_from_args
from planner.limits import UNCALIBRATED_MARGIN
from planner.links.urls import decode
from planner.measure.harness import MeasureOptions, ModelSpec
from planner.measure.options import command_for
from planner.plan.params import PlanParams
from planner.store.repository import Store

LAPTOP = "1:9.82,2:20.36,3:32.71,4:46.15,8:103.77,16:221.25"


def params_of(link: str) -> PlanParams:
    parts = urlsplit(link)
    assert parts.path == "/"  # the landing page is served at /, never at its own path
    params, ignored = decode(PlanParams, parse_qs(parts.query))
    assert ignored == []
    return params


def test_a_plain_link_carries_the_options_and_leaves_defaults_out(cli) -> None:
    run = cli("link", "--budget-ms", "40", "--policies", "batch-all,oldest-first",
              "--peak-sessions", "120")  # fmt: skip
    assert run.status == 0, run.err
    link = run.out.strip()
    assert link.startswith("http://localhost:8501/?")
    # A link pins the margin of the uncalibrated range it was made with (SPEC §6.2).
    assert params_of(link) == PlanParams(
        budget_ms=40.0,
        policies=("batch-all", "oldest-first"),
        peak_sessions=120,
        margin=UNCALIBRATED_MARGIN,
    )
    assert cli("link").out.strip() == f"http://localhost:8501/?margin={UNCALIBRATED_MARGIN}"


def test_base_and_json(cli) -> None:
    run = cli("link", "--base", "https://plans.example.com/seats/", "--min-fps", "25", "--json")
    assert run.status == 0, run.err
    doc = run.json
    margin = str(UNCALIBRATED_MARGIN)
    assert doc["url"] == f"https://plans.example.com/seats/?min_fps=25&margin={margin}"
    assert doc == {"url": doc["url"], "plan_id": None, "self_contained": False,
                   "params": {"min_fps": "25", "margin": margin}}  # fmt: skip


def test_points_are_embedded_as_given(cli) -> None:
    run = cli("link", "--points", "4:46.15,1:9.82", "--card", "t4")
    params = params_of(run.out.strip())
    assert [(p.batch, p.latency_ms) for p in params.points or ()] == [(1, 9.82), (4, 46.15)]
    assert params.card == "t4"


def test_self_contained_embeds_the_stored_curves_points(cli, store: Store) -> None:
    server = store.curves(card="server-24gb")[0]
    store.close()
    run = cli("link", "--curve", server.id, "--self-contained", "--budget-ms", "45")
    assert run.status == 0, run.err
    params = params_of(run.out.strip())
    assert params.curve is None and params.card == "server-24gb"
    assert [(p.batch, p.latency_ms) for p in params.points or ()] == [
        (p.batch, p.latency_ms) for p in server.points
    ]
    default = params_of(cli("link", "--self-contained").out.strip())
    assert default.card == "laptop-8gb" and default.precision == "fp16"


def test_save_stores_the_plan_and_prints_its_short_link(cli, db_path) -> None:
    run = cli("link", "--save", "--budget-ms", "30")
    assert run.status == 0, run.err
    link = run.out.strip()
    plan_id = link.rsplit("=", 1)[1]
    assert link == f"http://localhost:8501/?plan={plan_id}"
    assert f"saved plan {plan_id}" in run.err
    with Store(db_path) as store:
        saved = store.plan(plan_id)
        default = store.curves(card="laptop-8gb", precision="fp16")
    assert saved["budget_ms"] == "30"
    assert saved["curve"] in {c.id for c in default}  # the default curve, pinned
    again = cli("link", "--save", "--budget-ms", "30", "--json").json
    assert again["plan_id"] == plan_id  # the same plan saved twice is one plan


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--budget-ms", "abc"), "--budget-ms: not a number"),
        (("--percentile", "200"), "--percentile: must be above 0 and below 100"),
        (("--policies", "fastest"), "'fastest' not among"),
        (("--base", "ftp://host"), "is not an http:// or https:// address"),
        (("--base", "http://host/?x=1"), "must not carry a query"),
        (("--curve", "nosuchcurve1", "--save"), "not of the form"),
        (("--curve", "abcdefghijkl", "--save"), "abcdefghijkl"),
        (("--mig-profile", "3g.40gb", "--save"), "does not support MIG"),
        (("--curve", "abcdefghijkl", "--points", "1:5"), "not allowed with argument"),
    ],
)
def test_bad_options_exit_2_with_the_reason(cli, args: tuple[str, ...], message: str) -> None:
    run = cli("link", *args)
    assert run.status == 2
    assert message in run.err
    assert run.out == ""


def test_a_link_to_a_stored_curve_with_another_card_is_refused(cli, store: Store) -> None:
    server = store.curves(card="server-24gb")[0]
    store.close()
    run = cli("link", "--curve", server.id, "--card", "laptop-8gb")
    assert run.status == 2 and "differs from the stored curve's card" in run.err


@pytest.mark.parametrize(
    "options",
    [
        MeasureOptions(),
        MeasureOptions(batches=(1, 2, 4, 8), precisions=("fp16", "fp32"), resolution="256x144",
                       device="cuda", warmup=5, rounds=2, repetitions=20, channels_last=True,
                       model_name="ball v2", card="l4 (rack 3)", mig_profile="1g.10gb"),
    ],
)  # fmt: skip
def test_measure_command_reads_back_as_the_same_options(options: MeasureOptions) -> None:
    argv = shlex.split(shlex.join(command_for(options, out="card results.csv", store=True)))
    assert argv[:2] == ["planner", "measure"]
    args = build_parser().parse_args(argv[1:])
    assert str(args.out) == "card results.csv" and args.store
    assert options_from_args(args) == options


def test_measure_command_for_a_model_file(tmp_path: Path) -> None:
    model = tmp_path / "det ector.pt2"
    model.write_bytes(b"")  # options_from_args checks that the file exists
    options = MeasureOptions(model=ModelSpec(path=model, input_shape=(9, 288, 512)), batches=(1, 3))
    argv = shlex.split(shlex.join(command_for(options)))
    assert argv[-2:] == ["--out", "new-card.csv"]
    assert options_from_args(build_parser().parse_args(argv[1:])) == options
