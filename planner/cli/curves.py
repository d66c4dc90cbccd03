"""``planner curves``: list, show, import, rename, export and delete stored batch curves."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from planner.cli.output import csv_list, note, open_store, print_json, table
from planner.curves.curve import Curve, clean_batch
from planner.curves.imports import (
    CLI_WORDING,
    FORMATS,
    IMPORT_FORMATS,
    MAX_FILE_BYTES,
    ImportOptions,
    read_files,
)
from planner.curves.imports.base import read_limited
from planner.curves.imports.native import to_csv
from planner.curves.labels import distinct_labels, points_text
from planner.errors import BadInput
from planner.views.curve import CurveView, curve_view


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "curves", help="list, show, import, rename, export, delete curves"
    )
    commands = parser.add_subparsers(dest="curves_command", metavar="ACTION", required=True)

    listing = commands.add_parser("list", help="list stored curves")
    listing.add_argument("--model", help="only curves of this model")
    listing.add_argument("--card", help="only curves measured on this card")
    listing.add_argument("--precision", help="only curves at this precision")
    listing.add_argument("--json", action="store_true", help="print JSON")
    listing.set_defaults(handler=list_curves)

    show = commands.add_parser("show", help="show one curve and its points")
    show.add_argument("id", help="curve id (see `planner curves list`)")
    show.add_argument("--json", action="store_true", help="print JSON")
    show.set_defaults(handler=show_curve)

    imp = commands.add_parser(
        "import",
        help="import curves from files",
        description=(
            "Import batch curves from files. Every file is read completely first; if any row "
            "is bad nothing is stored and every problem is listed with its line. Files with "
            "the same metadata merge into one curve; importing the same data twice stores it "
            f"once. Files over {MAX_FILE_BYTES // 1024 // 1024} MiB are refused. Formats, "
            f"detected from the content: {_formats_text()}. Which row and latency each "
            "format stores is printed as notes on standard error."
        ),
    )
    imp.add_argument("files", nargs="+", type=Path, help="files to import")
    imp.add_argument("--format", default="auto", help=f"one of {', '.join(FORMATS)} (default auto)")
    imp.add_argument(
        "--model",
        help="model name, for files that do not state it; names the curve in place of a "
        "tool's own name (Triton model, Nexus profile)",
    )
    imp.add_argument(
        "--card",
        help="card name, for files that do not state it; names the card in place of a Nexus "
        "device name",
    )
    imp.add_argument("--precision", help="fp32, fp16, bf16 or int8")
    imp.add_argument("--resolution", help="input resolution WIDTHxHEIGHT, e.g. 512x288")
    imp.add_argument("--mig-profile", help="MIG profile the curve was measured on, e.g. 3g.40gb")
    imp.add_argument("--notes", help="free-form notes stored with the curve")
    imp.add_argument(
        "--batch",
        help="batch size of perf_analyzer runs (their -b): one value for all perf_analyzer "
        "files, or one per perf_analyzer file in order, e.g. 1,2,4",
    )
    imp.add_argument(
        "--config", help="Model Analyzer: import only this model config (e.g. add_sub_config_3)"
    )
    imp.add_argument(
        "--override",
        metavar="FIELD[,FIELD]",
        help="model and/or card: store the files under --model/--card in place of the "
        "model or card column they state (the file's own name is kept in the environment)",
    )
    imp.add_argument("--json", action="store_true", help="print the stored curves as JSON")
    imp.set_defaults(handler=import_curves)

    rename = commands.add_parser(
        "rename",
        help="store a curve under another model or card name",
        description=(
            "Store a curve's points under another model or card name, as a new curve with "
            "a new id that records the id it was renamed from. The old curve stays, so the "
            "saved plans that use it keep working; delete it afterwards if nothing needs it."
        ),
    )
    rename.add_argument("id", help="curve id")
    rename.add_argument("--model", help="the new model name")
    rename.add_argument("--card", help="the new card name")
    rename.add_argument("--json", action="store_true", help="print the new curve as JSON")
    rename.set_defaults(handler=rename_curve)

    export = commands.add_parser("export", help="write a curve as CSV or JSON")
    export.add_argument("id", help="curve id")
    export.add_argument("--format", choices=("csv", "json"), default="csv")
    export.add_argument("--out", type=Path, help="file to write (default: standard output)")
    export.set_defaults(handler=export_curve)

    delete = commands.add_parser("delete", help="delete a curve")
    delete.add_argument("id", help="curve id")
    delete.add_argument(
        "--yes", action="store_true", help="delete even if saved plans use the curve"
    )
    delete.set_defaults(handler=delete_curve)


def _formats_text() -> str:
    """Every registered import format: its name, what it reads and the options it needs."""
    described = []
    for kind in IMPORT_FORMATS.values():
        needs = ", ".join(CLI_WORDING.name(field) for field in kind.needs)
        described.append(f"{kind.name} ({kind.title}{f'; needs {needs}' if needs else ''})")
    return "; ".join(described)


def list_curves(args: argparse.Namespace) -> int:
    with open_store(args) as store:
        curves = store.curves(model=args.model, card=args.card, precision=args.precision)
    if args.json:
        print_json([c.summary() for c in curves])
        return 0
    rows = [
        (
            c.id,
            c.model,
            c.card + (f" ({c.mig_profile})" if c.mig_profile else ""),
            c.precision or "-",
            c.resolution or "-",
            c.source + (" (flagged)" if c.flag else ""),
            ",".join(map(str, c.batches)),
        )
        for c in curves
    ]
    print(table(rows, ("id", "model", "card", "precision", "resolution", "source", "batches")))
    if any(c.flag for c in curves):
        note("flagged: the measurement's drift check failed; `planner curves show ID` says why")
    return 0


def show_curve(args: argparse.Namespace) -> int:
    with open_store(args) as store:
        curve = store.curve(args.id)
    if args.json:
        print_json(curve.as_dict())
        return 0
    _describe(curve)
    return 0


def _describe(curve: Curve) -> None:
    print("\n".join(curve_text(curve_view(curve))))


def curve_text(view: CurveView) -> list[str]:
    """The lines ``planner curves show`` prints of a curve's view: its title, each field
    of its metadata (long ones in full), its flag and its points."""
    lines = [f"{view.id}  {view.title}  [{view.source}]"]
    fields = [row for row in view.metadata.rows if row[0] not in ("id", "source")]
    lines.extend(f"  {field}: {value}" for field, value in (*fields, *view.long_metadata))
    if view.flag is not None:
        lines.append(f"  {view.flag.label.lower()}: {view.flag.value}. {view.flag.help}")
    lines.append(table(view.points.rows, view.points.header))
    return lines


def import_curves(args: argparse.Namespace) -> int:
    files = [(str(path), read_limited(path)) for path in args.files]
    batches: tuple[int, ...] = ()
    if args.batch:
        batches = tuple(clean_batch(b) for b in csv_list(args.batch))
    options = ImportOptions(
        model=args.model,
        card=args.card,
        precision=args.precision,
        resolution=args.resolution,
        mig_profile=args.mig_profile,
        notes=args.notes,
        batch=batches,
        config=args.config,
        override=frozenset(csv_list(args.override or "")),
    )
    result = read_files(files, options, args.format)
    with open_store(args) as store, store.batch():
        # One read for every curve of the import, then one write, in one hold of the file.
        already = store.stored_curve_ids(c.id for c in result.curves)
        stored = store.add_curves(result.curves)
    for line in result.notes:
        note(line)
    if args.json:
        print_json([c.as_dict() for c in stored])
        return 0
    labels = distinct_labels(stored)
    for curve in stored:
        verb = "already stored" if curve.id in already else "stored"
        print(f"{verb} {curve.id}  {labels[curve.id]}  ({points_text(len(curve.points))})")
    if already and len(already) == len({c.id for c in stored}):
        note("nothing new: the store already holds every curve of this import")
    return 0


def rename_curve(args: argparse.Namespace) -> int:
    if not (args.model or args.card):
        raise BadInput("give --model or --card (or both): the new name")
    with open_store(args) as store:
        renamed = store.rename_curve(args.id, model=args.model, card=args.card)
    if args.json:
        print_json(renamed.as_dict())
        return 0
    print(f"stored {renamed.id}  {renamed.label}  (renamed from {args.id})")
    return 0


def export_curve(args: argparse.Namespace) -> int:
    with open_store(args) as store:
        curve = store.curve(args.id)
    text = to_csv([curve]) if args.format == "csv" else json.dumps(curve.as_dict(), indent=2) + "\n"
    if args.out:
        args.out.write_text(text, encoding="utf-8")
        note(f"wrote {args.out}")
    else:
        sys.stdout.write(text)
    return 0


def delete_curve(args: argparse.Namespace) -> int:
    with open_store(args) as store:
        curve = store.delete_curve(args.id, force=args.yes)
    note(f"deleted {curve.id}  {curve.label}")
    return 0
