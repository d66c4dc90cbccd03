"""The ``planner`` command line: a thin layer over the library.

Each sub-command lives in its own module with a ``register(subparsers)`` function that
adds its parser and sets ``handler``. Conventions, shared by every command:

- ``--json`` puts one JSON document on standard output and nothing else; messages go to
  standard error.
- Exit status 0 on success, 2 on bad input (argparse's own errors included), with one
  line per problem on standard error.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import signal
import sys
import threading
from collections.abc import Iterator, Sequence

from planner import __version__
from planner.errors import PlannerError

# One entry per sub-command module, in the order ``planner --help`` lists them.
COMMANDS = (
    "curves",
    "cards",
    "fit",
    "simulate",
    "recommend",
    "compare-cards",
    "study",
    "profiles",
    "fleet",
    "compare-plans",
    "report",
    "deploy",
    "link",
    "measure",
    "loadtest",
    "bench",
    "schema",
    "compile",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="planner",
        description=(
            "GPU Seat Planner: store batch curves, fit them, simulate live sessions and "
            "recommend how many seats one GPU holds."
        ),
    )
    parser.add_argument("--version", action="version", version=f"planner {__version__}")
    parser.add_argument(
        "--db",
        metavar="FILE",
        help="the DuckDB store to use (default: $PLANNER_DB, else a file in the per-user "
        "data directory)",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMANDS:
        importlib.import_module(f"planner.cli.{name.replace('-', '_')}").register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)  # for reports that cite it
    try:
        status: int = args.handler(args)
    except PlannerError as exc:
        from planner.curves.imports.base import capped

        for problem in capped(exc.problems):  # a few lines, however many problems
            print(f"planner: {problem}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # The reader went away (``planner curves list | head``); that is not an error.
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - silence the final flush
        return 0
    except KeyboardInterrupt:
        # A second Ctrl-C (a terminal's repeat, ``timeout -s INT`` around a process group)
        # would interrupt this handler itself and end in a traceback: the command is
        # stopping anyway, so the rest of the way out ignores it.
        with _ignoring_interrupts():
            print("planner: interrupted", file=sys.stderr)
        return 130
    return status


@contextlib.contextmanager
def _ignoring_interrupts() -> Iterator[None]:
    """SIGINT ignored inside, where the process may (only the main thread sets handlers)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
