"""``planner report``: a plan as one self-contained HTML file and a Markdown version."""

from __future__ import annotations

import argparse
from pathlib import Path

from planner.cli.link import DEFAULT_BASE, clean_base
from planner.cli.output import note, open_store, print_json
from planner.cli.planning import add_plan_source, plan_from_args, plan_profile
from planner.errors import BadInput
from planner.plan.fleet import plan_fleet
from planner.plan.recommend import recommend
from planner.plan.resolve import plan_inputs
from planner.report.document import ReportContext
from planner.report.html import html_report
from planner.report.markdown import markdown_report


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "report",
        help="write a plan report: self-contained HTML and Markdown",
        description=(
            "Write a plan as a report to send: one HTML file that works offline (charts "
            "interactive, Plotly's script embedded; nothing is fetched when it is opened) and "
            "a Markdown version. It holds the inputs, the curve with its band and provenance, "
            "the seat cap with its range and reasons, every option with its isolation, fleet "
            "and cost, the demand profile if any, the assumptions and the share links. The "
            "plan is given with the options of `planner recommend`, or as a saved plan."
        ),
    )
    add_plan_source(parser)
    parser.add_argument(
        "--out",
        metavar="PATH",
        help="where to write: PATH.html writes only the HTML, PATH.md only the Markdown, "
        "PATH without either extension both (default: seat-plan-MODEL-CARD, both, in the "
        "current folder)",
    )
    parser.add_argument(
        "--base",
        default=DEFAULT_BASE,
        metavar="URL",
        help=f"where the dashboard is served, for the links (default {DEFAULT_BASE})",
    )
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.set_defaults(handler=run)


def report_paths(out: Path) -> tuple[Path, ...]:
    """The files ``--out`` names: PATH.html writes only the HTML, PATH.md only the
    Markdown (either extension in any case), and a path without one of them both, as
    PATH.html and PATH.md."""
    suffix = out.suffix.lower()
    if suffix == ".html":
        return (out.with_suffix(".html"),)
    if suffix == ".md":
        return (out.with_suffix(".md"),)
    return (out.with_name(out.name + ".html"), out.with_name(out.name + ".md"))


def run(args: argparse.Namespace) -> int:
    base = clean_base(args.base)
    with open_store(args) as store:
        params, plan_id = plan_from_args(args, store)
        inputs = plan_inputs(params, store)
        profile = plan_profile(args, params, store)
        plan_name = next((p.name for p in store.plans() if p.id == plan_id), None)
    if not args.json:
        note(f"planning {inputs.curve.label} ({inputs.curve.id}) ...")
    result = recommend(inputs.request)
    ctx = ReportContext(
        params=params,
        inputs=inputs,
        result=result,
        fleet=plan_fleet(result, profile, params.lead_time_min),
        base=base,
        plan_id=plan_id,
        plan_name=plan_name,
    )
    stem = Path(args.out) if args.out else Path(ctx.file_stem)
    paths = report_paths(stem)
    try:
        for path in paths:
            text = html_report(ctx) if path.suffix == ".html" else markdown_report(ctx)
            path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise BadInput(f"cannot write the report to {stem}: {exc.strerror or exc}") from None
    written = {p.suffix: str(p) for p in paths}
    if args.json:
        print_json(
            {"headline": ctx.headline, "html": written.get(".html"), "markdown": written.get(".md")}
        )
    else:
        for path in paths:
            print(path)
    return 0
