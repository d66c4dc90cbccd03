"""What the commands that take a plan share: where the plan comes from (recommend's
options, or a saved plan's id), its demand profile (a name or a CSV file), and how a
fleet over a profile is printed."""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Any

from planner.cli.output import table
from planner.demand import DemandFleet, DemandProfile, read_profile_csv
from planner.errors import BadInput
from planner.fleet import plan_profile as named_profile
from planner.imports.base import read_limited
from planner.links import PARAMETERS, PlanParams
from planner.plan import PlanInputs, plan_curve
from planner.plan_compare import saved_plan
from planner.store import Store


def add_plan_source(parser: argparse.ArgumentParser) -> None:
    """``--curve ID | --points ... | --plan ID`` (all optional: the default curve), and
    recommend's plan options."""
    from planner.cli.recommend import add_plan_options

    source = parser.add_mutually_exclusive_group()
    source.add_argument("--curve", metavar="ID", help="a stored curve (see `planner curves list`)")
    source.add_argument(
        "--points", metavar="B:MS,...", help='measured points, e.g. "1:9.82,2:20.36,4:46.15"'
    )
    source.add_argument(
        "--plan",
        metavar="ID",
        help="a saved plan (the dashboard's Save plan, or `planner link --save`), instead of "
        "the options below",
    )
    add_plan_options(parser)


def plan_from_args(args: argparse.Namespace, store: Store) -> tuple[PlanParams, str | None]:
    """The plan the options describe, or the saved plan ``--plan`` names (with its id).

    With ``--plan`` the saved plan is used as it is: an option that would change it is
    refused (save a new plan, or give the options without ``--plan``).
    """
    from planner.cli.recommend import PLAN_OPTIONS, plan_params

    if getattr(args, "plan", None) is None:
        params = plan_params(args)
        if args.card and args.curve:
            stored = store.curve(args.curve)
            if stored.card.lower() != args.card.strip().lower():
                raise BadInput(
                    f"--card {args.card} differs from the stored curve's card {stored.card}"
                )
        return with_calibration(params, args, store), None
    given = [
        f"--{name.replace('_', '-')}"
        for name in PLAN_OPTIONS
        if getattr(args, name, None) is not None
        and getattr(args, name) != _default_text(name)
        and name != "profile"
    ]
    if args.card:
        given.append("--card")
    if args.other_jobs:
        given.append("--other-jobs")
    if getattr(args, "calibration", None) is not None:
        given.append("--calibration")
    if given:
        raise BadInput(
            f"--plan uses the saved plan as it is; {', '.join(given)} would change it "
            "(save a new plan, or give the options without --plan)"
        )
    plan_id = args.plan.strip().lower()
    params = saved_plan(store, plan_id)
    if args.profile is not None:
        raise BadInput("--plan uses the saved plan's own demand profile; leave out --profile")
    return params, plan_id


def with_calibration(
    params: PlanParams, args: argparse.Namespace, store: Store, default: str = "latest"
) -> PlanParams:
    """``params`` with the calibration ``--calibration`` names pinned by id: by default
    the curve's latest (none if it has none); ``none``; or an id of the curve's."""
    from dataclasses import replace

    from planner.calibration_store import resolve

    curve = plan_curve(params, store)
    found = resolve(store, getattr(args, "calibration", None), curve.id, default=default)
    return replace(params, calibration=None if found is None else found.id)


def calibration_note(inputs: PlanInputs) -> str:
    """Whether a plan is calibrated, in one line for the terminal."""
    if inputs.calibration is not None:
        return inputs.calibration.description
    if inputs.latest is not None:
        return (
            f"not calibrated (--calibration none); the curve has calibration "
            f"{inputs.latest.id} from {inputs.latest.source}"
        )
    return "not calibrated: no load test has calibrated this curve (planner loadtest)"


def _default_text(name: str) -> str | None:
    parameter = PARAMETERS[name]
    return None if parameter.default is None else parameter.codec.format(parameter.default)


def profile_file(args: Any) -> Path | None:
    """The CSV file ``--profile`` names, when it names an existing file (BadInput when it
    looks like a file's path but there is none)."""
    text = getattr(args, "profile", None)
    if not text:
        return None
    path = Path(text)
    if path.is_file():
        return path
    if "/" in text or "\\" in text or text.lower().endswith(".csv"):
        raise BadInput(f"--profile {text[:80]!r}: no such file")
    return None


def plan_profile(args: Any, params: PlanParams, store: Store) -> DemandProfile | None:
    """The plan's demand profile: a CSV file given to ``--profile`` (read, not stored), or
    the built-in shape or stored profile the plan names."""
    path = profile_file(args)
    if path is not None:
        stem = re.sub(r"[^a-z0-9._-]+", "-", path.stem.lower()).strip("-.") or "profile"
        return read_profile_csv(stem[:64], str(path), read_limited(path))
    return named_profile(params, store)


def print_fleet_summary(fleet: DemandFleet) -> None:
    """The two provisioning rules side by side, and what the figures assume."""
    profile = fleet.profile
    print(
        f"demand: {profile.name}, {profile.shape}, peak {profile.peak:,.4g} sessions "
        f"({fleet.seats_per_card} seats per card, {fleet.headroom:.0%} headroom)"
    )
    rows = []
    for rule, name in (
        (fleet.fixed, "fixed, sized for the peak"),
        (fleet.autoscaled, f"autoscaled, {fleet.lead_time_min:g} min lead time"),
    ):
        rows.append(
            (
                name,
                rule.peak_gpus,
                f"{rule.gpu_hours_per_day:,.1f}",
                "-" if rule.cost_per_day is None else f"{rule.cost_per_day:,.2f}",
                "-" if rule.cost_per_month is None else f"{rule.cost_per_month:,.0f}",
                "-" if rule.mean_utilisation is None else f"{rule.mean_utilisation:.0%}",
            )
        )
    print(
        table(
            rows,
            ("provisioning", "peak GPUs", "GPU-h/day", "USD/day", "USD/month", "seat use"),
        )
    )
    for line in fleet.notes:
        print(f"  - {line}")
