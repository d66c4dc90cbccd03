"""``planner deploy``: the deployment settings of a plan's recommended (or chosen) option."""

from __future__ import annotations

import argparse
import errno
import os
from pathlib import Path

from planner.cli.output import note, open_store, print_json
from planner.cli.planning import add_plan_source, plan_from_args
from planner.errors import BadInput
from planner.plan.deploy import choose_option, deployment
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


def write_new(path: Path, text: str) -> None:
    """Write ``path`` without following a link planted there: a symbolic link in the
    folder is refused (it could point at any file of the user's), a regular file is
    replaced."""
    if path.is_symlink():
        raise BadInput(
            f"{path} is a symbolic link; nothing was written (remove it or use another --out)"
        )
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0)
    try:
        descriptor = os.open(path, flags, 0o644)
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # a link planted between the check and the open
            raise BadInput(f"{path} is a symbolic link; nothing was written") from None
        raise
    with os.fdopen(descriptor, "w", encoding="utf-8") as out:
        out.write(text)


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
    folder = Path(args.out) if args.out is not None else None
    written = []
    if folder is not None or not args.json:
        folder = folder or Path("deploy")
        try:
            folder.mkdir(parents=True, exist_ok=True)
            links = [str(folder / f.name) for f in files if (folder / f.name).is_symlink()]
            if links:  # checked before anything is written, so nothing is half-written
                raise BadInput(
                    f"{', '.join(links)}: a symbolic link; nothing was written (remove it, or "
                    "use another --out)"
                )
            for file in files:
                path = folder / file.name
                write_new(path, file.text)
                written.append(str(path))
        except OSError as exc:
            raise BadInput(f"cannot write to {folder}: {exc.strerror or exc}") from None
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
