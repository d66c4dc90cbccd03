"""What ``planner loadtest`` prints and writes of a load test: the files asked for
(``--out``, ``--report``), the load test's view as text (``planner.views.loadtest``) or
its ``--json`` document."""

from __future__ import annotations

import argparse

from planner.cli.loadtest_options import check_files
from planner.cli.output import note, print_json, table
from planner.validate.options import shown_command
from planner.validate.runs import LoadTest
from planner.views import loadtest


def write_files(args: argparse.Namespace, test: LoadTest) -> None:
    from planner.validate import files

    if args.out is not None:
        note(files.write_frames_csv(args.out, test))
    if args.report is not None:
        command = shown_command(getattr(args, "argv", ["loadtest"]))
        note(files.write_report(args.report, test, check_files(args), command))


def stored(args: argparse.Namespace, test: LoadTest, message: str) -> None:
    """Say what was stored, write the files asked for, and print the comparison."""
    note(message)
    if test.calibration is not None:
        note(f"stored calibration {test.calibration.id}: {test.calibration.description}")
    write_files(args, test)
    report(args, test)


def report(args: argparse.Namespace, test: LoadTest) -> None:
    if args.json:
        print_json(loadtest.summary(test))
        return
    print("\n".join(loadtest_text(loadtest.loadtest_view(test))))
    for warning in test.warnings:
        note(f"warning: {warning}")


def loadtest_text(view: loadtest.LoadTestView) -> list[str]:
    """The lines ``planner loadtest`` prints of a load test's view."""
    lines = [view.title]
    lines += [f"{f.label}: {f.value}" + (f" ({f.help})" if f.help else "") for f in view.facts]
    compared = [(view.error_titles[0], view.errors)]
    if view.calibrated_errors is not None:
        compared.append((view.error_titles[1], view.calibrated_errors))
    for title, errors in compared:
        lines += [f"{title}:", table(errors.rows, errors.header)]
    if view.accuracy.rows:
        lines += ["accuracy over the loaded runs:", table(view.accuracy.rows, view.accuracy.header)]
    lines += [
        f"seat cap, {policy}: measured {measured}, predicted {predicted} ({verdict}); "
        f"measured: {why}"
        for policy, measured, predicted, verdict, why in view.caps.rows
    ]
    if view.calibration is not None:
        lines.append(view.calibration)
    return lines + list(view.server)
