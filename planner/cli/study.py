"""``planner study FILE``: a grid of recommendations, computed on all cores or a Ray
cluster, stored cell by cell."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from planner.cli.output import StatusLine, note, open_store, print_json, table
from planner.studies.params import StudyParams
from planner.studies.run import ENGINES, Progress, StudyInterrupted, default_workers, run_study
from planner.studies.store import load_study
from planner.studies.study import MAX_CELLS, read_study
from planner.views.study import METRICS, StudyView, curve_names, settle, study_view


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "study",
        help="a grid of recommendations over curves, budgets, modes and more",
        description=(
            "Run every cell of a study file (TOML or JSON; see examples/study.toml): each "
            "cell is a recommendation, keyed by a hash of its inputs and stored as it "
            "finishes. Running the file again computes only the cells not stored yet, so an "
            f"interrupted study resumes where it stopped. At most {MAX_CELLS:,} cells."
        ),
    )
    parser.add_argument("file", type=Path, help="the study file (.toml or .json)")
    parser.add_argument(
        "--engine",
        choices=ENGINES,
        default="local",
        help="local: a process pool on this machine (default); ray: a Ray cluster",
    )
    parser.add_argument(
        "--workers",
        type=int,
        help=f"processes (local) or CPUs for a local Ray (default: the cores, {default_workers()})",
    )
    parser.add_argument(
        "--ray-address", help="the Ray cluster to use, e.g. ray://head:10001 (default: a local Ray)"
    )
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    study = read_study(args.file)
    bar = _Bar(sys.stderr)
    with open_store(args) as store:
        try:
            summary = run_study(
                store,
                study,
                engine=args.engine,
                workers=args.workers,
                ray_address=args.ray_address,
                progress=bar,
                preparing=bar.preparing,
            )
        except StudyInterrupted as stopped:
            bar.close()
            done = stopped.summary
            note(
                f"planner: interrupted; {done.skipped + done.computed} of {done.cells} cells "
                "are stored; run the same command again to compute the rest"
            )
            if args.json:
                print_json(done.as_dict())
            return 130
    bar.close()
    doc = summary.as_dict()
    if args.json:
        print_json(doc)
        return 0
    rate = doc["cells_per_s"]
    print(
        f"study {summary.study!r}: {summary.cells} cells; {summary.skipped} already stored, "
        f"{summary.computed} computed ({summary.failed} failed) in {summary.elapsed_s:.1f} s"
        + (f", {rate:.1f} cells/s" if rate else "")
        + f" on {summary.workers} {summary.engine} workers"
    )
    with open_store(args) as store:
        stored, members = load_study(store, summary.study)
        names = curve_names(store.curves(), {m.curve_id for m in members})
    params = StudyParams(study=summary.study)
    print("\n".join(study_text(study_view(stored, members, settle(members, params), names))))
    return 0


def study_text(view: StudyView) -> list[str]:
    """The lines ``planner study`` prints of a study's view: its summary, the grid of
    seats per card over its first two axes, the front, the cells and their plans."""
    lines = ["", view.summary]
    if view.single is not None:
        lines.append(view.single)
    if view.params.hold:
        lines.append("other axes held at: " + ", ".join(view.params.hold))
    if view.heatmap is not None:
        lines += [
            "",
            f"{METRICS[view.params.metric]}:",
            table(view.heatmap.rows, view.heatmap.header),
        ]
    if view.no_figure is not None:
        lines.append(view.no_figure)
    if len(view.front) > 1:
        lines += ["", "cheapest cost per seat-hour at each latency budget:"]
        lines += [f"  {p.budget} ms: {p.cost_text} ({p.label})" for p in view.front]
    shown = [h for h in view.cells.header if h != "plan"]
    lines += ["", table([[r[h] for h in shown] for r in view.cells.records], shown)]
    lines += ["", "each cell's plan (open on the dashboard):"]
    lines += [f"  {link.what}: {link.address}" for link in view.plans]
    return lines


class _Bar(StatusLine):
    """Cells done, cells per second and the time left, on standard error (redrawn in
    place on a terminal, a line every ten seconds elsewhere)."""

    def __call__(self, state: Progress) -> None:
        left = state.total - state.skipped
        final = state.done >= left
        if not self.due(0.2 if self.terminal else 10.0, final=final):
            return
        eta = state.eta_s
        line = (
            f"cells {state.done}/{left} to compute ({state.skipped} stored before), "
            f"{state.rate:.1f}/s"
            + (f", about {eta:.0f} s left" if eta is not None and not final else "")
            + (f", {state.failed} failed" if state.failed else "")
        )
        if self.terminal:
            self.draw(line)
        else:
            self.log(line)

    def preparing(self, done: int, total: int) -> None:
        """Cells prepared so far, before any is computed."""
        if not self.due(0.2 if self.terminal else 10.0, final=done >= total):
            return
        line = f"preparing cells {done:,}/{total:,}"
        if self.terminal:
            self.draw(line)
        else:
            self.log(line)

    def close(self, keep: bool = True) -> None:
        super().close(keep)
