"""What ``planner loadtest`` prints and writes of a load test: the files asked for
(``--out``, ``--report``), the load test's view as text (``planner.views.loadtest``) or
its ``--json`` document, and the progress bar on standard error."""

from __future__ import annotations

import argparse

from planner.cli.loadtest_options import check_files
from planner.cli.output import StatusLine, note, print_json, table
from planner.validate.options import shown_command
from planner.validate.runs import LoadTest, Progress
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


class Bar(StatusLine):
    """The load test's progress on standard error: a bar redrawn in place on a terminal,
    one line per run elsewhere; a context manager that closes it."""

    message = ""

    def __enter__(self) -> Bar:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __call__(self, event: Progress) -> None:
        if not self.terminal:
            if event.message != self.message:
                self.message = event.message
                self.log(f"[{event.fraction:4.0%}] {event.message}")
        elif self.due(final=event.fraction >= 1):
            self.draw(f"{self.bar(event.fraction)}  {event.message}")
