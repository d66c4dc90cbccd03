"""``planner profiles``: list, show, add and delete stored demand profiles."""

from __future__ import annotations

import argparse
from pathlib import Path

from planner.cli.output import note, open_store, print_json, table
from planner.curves.imports.base import read_limited
from planner.demand.profiles import SHAPES, DemandProfile, read_profile_csv, typed_profile
from planner.errors import BadInput


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "profiles",
        help="list, show, add, delete demand profiles",
        description=(
            "Demand profiles are concurrent sessions over a day or a week, stored by name for "
            "`planner fleet --profile NAME` and the Plan page. The built-in shapes "
            f"({', '.join(SHAPES)}) need no storing: they are scaled to a plan's peak."
        ),
    )
    commands = parser.add_subparsers(dest="profiles_command", metavar="ACTION", required=True)

    listing = commands.add_parser("list", help="list stored profiles and the built-in shapes")
    listing.add_argument("--json", action="store_true", help="print JSON")
    listing.set_defaults(handler=list_profiles)

    show = commands.add_parser("show", help="show one stored profile, step by step")
    show.add_argument("name")
    show.add_argument("--json", action="store_true", help="print JSON")
    show.set_defaults(handler=show_profile)

    add = commands.add_parser(
        "add",
        help="store a profile from a CSV file or typed values",
        description=(
            "Store a demand profile. --file reads a CSV with the columns time and sessions "
            "(a time of day like 08:00, a date and time, or hours from the start; one row per "
            "step, at a regular step); --values takes 24 hourly values (a day) or 168 (a week "
            "from Monday 00:00). A bad file stores nothing and lists every problem."
        ),
    )
    add.add_argument("name", help="letters, digits, '.', '_' and '-'")
    source = add.add_mutually_exclusive_group(required=True)
    source.add_argument("--file", type=Path, help="a CSV file of time,sessions")
    source.add_argument("--values", help='24 or 168 numbers, e.g. "0,0,0,5,...")')
    add.add_argument(
        "--replace", action="store_true", help="replace a stored profile of the same name"
    )
    add.add_argument("--json", action="store_true", help="print the stored profile as JSON")
    add.set_defaults(handler=add_profile)

    delete = commands.add_parser("delete", help="delete a stored profile")
    delete.add_argument("name")
    delete.add_argument(
        "--yes", action="store_true", help="delete even if saved plans name the profile"
    )
    delete.set_defaults(handler=delete_profile)


def list_profiles(args: argparse.Namespace) -> int:
    with open_store(args) as store:
        stored = store.profiles()
    if args.json:
        print_json(
            {
                "built_in": [{"name": n, "description": w} for n, (w, _) in SHAPES.items()],
                "stored": [
                    {k: v for k, v in p.as_dict().items() if k != "sessions"} for p in stored
                ],
            }
        )
        return 0
    rows = [(n, "built-in shape", "24 steps of 60 min (a day, repeating)", "x peak", w)
            for n, (w, _) in SHAPES.items()]  # fmt: skip
    rows += [(p.name, p.source, p.shape, f"{p.peak:,.4g}", p.description) for p in stored]
    print(table(rows, ("name", "source", "steps", "peak sessions", "description")))
    return 0


def show_profile(args: argparse.Namespace) -> int:
    with open_store(args) as store:
        profile = store.profile(args.name)
    if args.json:
        print_json(profile.as_dict())
        return 0
    _print(profile)
    return 0


def _print(profile: DemandProfile) -> None:
    print(f"{profile.name}: {profile.shape}, peak {profile.peak:,.4g} sessions")
    if profile.description:
        print(profile.description)
    rows = [(f"{h:g}", f"{s:,.4g}") for h, s in zip(profile.hours, profile.sessions, strict=True)]
    start = f" from {profile.start}" if profile.start else ""
    print(table(rows, (f"hour{start}", "sessions")))


def add_profile(args: argparse.Namespace) -> int:
    if args.file is not None:
        profile = read_profile_csv(args.name, str(args.file), read_limited(args.file))
    else:
        profile = typed_profile(args.name, args.values)
    with open_store(args) as store:
        stored = store.save_profile(profile, replace=args.replace)
    if args.json:
        print_json(stored.as_dict())
    else:
        note(f"stored profile {stored.name}: {stored.shape}, peak {stored.peak:,.4g} sessions")
    return 0


def delete_profile(args: argparse.Namespace) -> int:
    with open_store(args) as store:
        try:
            gone = store.delete_profile(args.name, force=args.yes)
        except BadInput as exc:
            raise BadInput([*exc.problems, "add --yes to delete it anyway"]) from None
    note(f"deleted profile {gone.name}")
    return 0
