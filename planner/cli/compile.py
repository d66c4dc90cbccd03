"""``planner compile``: compile the simulator ahead of the first plan.

The simulator's loop is machine code that Numba compiles on first use and keeps in the
compiled-code cache (``planner.sim.jit``). On a machine that has never run the planner
that compile is most of the wait for the first answer; the README's first command runs
this between installing the package and starting the dashboard, so the first visitor
finds the code compiled. Running it again loads the cached code and says so.
"""

from __future__ import annotations

import argparse

from planner.views.work import compiled_code_cache, warm_up


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "compile",
        help="compile the simulator ahead of the first plan",
        description=(
            "Compile the simulator's loop for every policy and sharing mode into the "
            "compiled-code cache (or load it from there), so that the first plan, on the "
            "command line or the dashboard, does not wait for the compiler. --all also "
            "compiles the versions that only some plans need: the loop with a pool of "
            "CPU threads (worker stages with CPU threads) and the loop of a server that "
            "queues every frame (--queue all)."
        ),
    )
    parser.add_argument(
        "--all",
        action="store_true",
        help="also compile the loops with CPU threads and for --queue all",
    )
    parser.set_defaults(handler=compile_simulator)


def compile_simulator(args: argparse.Namespace) -> int:
    seconds = warm_up(cpu_pool=args.all, queue_all=args.all)
    print(f"simulator ready in {seconds:.1f} s (compiled code kept in {compiled_code_cache()})")
    return 0
