"""``planner deploy``: the deployment settings of a plan's recommended (or chosen) option."""

from __future__ import annotations

import argparse
from pathlib import Path

from planner.cli.output import note, open_store, print_json
from planner.cli.planning import add_plan_source, plan_from_args
from planner.errors import BadInput
from planner.plan.deploy import choose_option, deployment, write
from planner.plan.recommend import recommend
from planner.plan.resolve import plan_inputs


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "deploy",
        help="write the settings that apply a plan: worker, Triton, device plugin, MPS, MIG",
        description=(
            "Write the files that apply the plan's recommended option (or --option): the "
            "worker's session cap and policy parameters (worker.json); for triton, max-batch "
            "and batch-all the max_batch_size and dynamic_batching lines of a Triton "
            "config.pbtxt; for time-slicing the NVIDIA device plugin's sharing config; for MPS "
            "the client's thread percentage and memory limit; for MIG the profile per card "
            "(nvidia-mig-parted). Each file starts with the assumption it encodes."
        ),
    )
    add_plan_source(parser)
    parser.add_argument(
        "--option",
        metavar="POLICY[,MODE]",
        help="the option to deploy, e.g. triton,exclusive (default: the recommended one)",
    )
    parser.add_argument(
        "--out",
        metavar="DIR",
        help="folder to write the files into (default: ./deploy; with --json, none unless given)",
    )
    parser.add_argument("--json", action="store_true", help="print the files as JSON")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    if args.out is not None and not str(args.out).strip():
        raise BadInput("--out needs a folder name (an empty one would mean this folder)")
    with open_store(args) as store:
        params, _ = plan_from_args(args, store)
        inputs = plan_inputs(params, store)
    if not args.json:
        note(f"planning {inputs.curve.label} ({inputs.curve.id}) ...")
    result = recommend(inputs.request)
    option = choose_option(result, args.option)
    files = deployment(result, option, inputs.card)
    written = []
    if args.out is not None or not args.json:
        written = [str(p) for p in write(files, Path(args.out or "deploy"))]
    if args.json:
        print_json(
            {
                "option": option.label,
                "files": [f.as_dict() for f in files],
                "written": written,
            }
        )
        return 0
    note(f"deployment settings for {option.label}:")
    for file, where in zip(files, written, strict=True):
        print(where)
        note(f"  {file.assumption}")
    return 0
