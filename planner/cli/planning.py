"""What the commands that take a plan share: where the plan comes from (recommend's
options, or a saved plan's id), its demand profile (a name or a CSV file), and how a
fleet over a profile is printed."""

from __future__ import annotations

import argparse
import math
import re
import sys
import time
from pathlib import Path
from typing import Any

from planner import display, limits
from planner.cli.output import StatusLine, link_values, option, option_name, table
from planner.curves.curve import parse_points_option
from planner.curves.imports.base import read_limited
from planner.demand.fleet import DemandFleet
from planner.demand.profiles import DemandProfile, read_profile_csv
from planner.errors import BadInput
from planner.links.codecs import number_text, points_text
from planner.links.parameters import PARAMETERS
from planner.plan.cascade import parse_shares
from planner.plan.compare_plans import saved_plan
from planner.plan.fleet import plan_profile as named_profile
from planner.plan.fleet import rule_text
from planner.plan.outcomes import Recommendation
from planner.plan.params import PlanParams, queue_conflicts
from planner.plan.recommend import recommend
from planner.plan.request import Request
from planner.plan.resolve import PlanInputs, pin_batcher, plan_curve
from planner.store.repository import Store
from planner.views.choices import ALL_PROFILES, MODES, POLICIES
from planner.views.work import Work


def add_plan_source(parser: argparse.ArgumentParser) -> None:
    """``--curve ID | --points ... | --plan ID`` (all optional: the default curve), and
    recommend's plan options."""

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

    if getattr(args, "plan", None) is None:
        params = plan_params(args)
        if args.card and args.curve:
            stored = store.curve(args.curve)
            if stored.card.lower() != args.card.strip().lower():
                raise BadInput(
                    f"--card {args.card} differs from the stored curve's card {stored.card}"
                )
        params = with_calibration(params, args, store)
        # A curve measured on a server: the plan pins the batcher settings it takes.
        return pin_batcher(params, plan_curve(params, store)), None
    given = [
        f"--{name.replace('_', '-')}"
        for name in PLAN_OPTIONS
        if getattr(args, name, None) is not None
        and getattr(args, name) != _default_text(name)
        and name != "profile"
    ]
    if args.card:
        given.append("--card")
    if args.model:
        given.append("--model")
    if args.other_jobs:
        given.append("--other-jobs")
    if getattr(args, "calibration", None) is not None:
        given.append("--calibration")
    if getattr(args, "margin", None) is not None:
        given.append("--margin")
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

    from planner.store.calibrations import resolve

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
        f"({display.span(fleet.seats, unit=' seats')} per card, "
        f"{display.fraction(fleet.headroom)} headroom)"
    )
    rows = []
    for rule, name in (
        ("fixed", "fixed, sized for the peak"),
        ("autoscaled", f"autoscaled, {fleet.lead_time_min:g} min lead time"),
    ):
        text = rule_text(fleet, rule)
        rows.append(
            (
                name,
                text["peak_gpus"],
                text["gpu_hours_per_day"],
                text["cost_per_day"],
                text["cost_per_month"],
                text["mean_utilisation"],
            )
        )
    print(
        table(
            rows,
            ("provisioning", "peak GPUs", "GPU-h/day", "per day", "per month", "seat use"),
        )
    )
    for line in fleet.notes:
        print(f"  - {line}")


def add_plan_options(parser: argparse.ArgumentParser) -> None:
    """The options of a plan (shared with ``planner link``); defaults and ranges are the
    library's, read from the link parameters (``planner.links.urls.PARAMETERS``)."""
    parser.add_argument(
        "--margin",
        metavar="VERSION|none",
        help="the uncalibrated range's margin, the model's error on published results and "
        f"load tests, by version (default {limits.UNCALIBRATED_MARGIN}, the current one; "
        "none: the band's range alone, as links from before it)",
    )
    parser.add_argument("--card", help="the card (default: the stored curve's card)")
    parser.add_argument(
        "--model",
        help="with --points: the model they measure, to name the plan by (a stored curve "
        "names its own)",
    )
    option(parser, "budget_ms", "latency budget, ms end to end")
    option(parser, "percentile", "percentile of the budget")
    option(parser, "min_fps", "slowest session's fps floor")
    option(parser, "source_fps", "frames per second every source sends")
    parser.add_argument("--max-overwritten", help="largest overwritten fraction, e.g. 0.05")
    option(parser, "overhead_ms", "per-frame time outside the GPU, ms")
    parser.add_argument(
        "--policies", help=f"comma-separated, from {', '.join(POLICIES)} (default: all)"
    )
    option(
        parser,
        "max_batch",
        "max-batch and triton: largest batch B, as for simulate (default: the batcher of "
        "the server the curve was measured on, else each policy's own: max-batch 4, triton 8)",
    )
    option(
        parser,
        "max_queue_delay_us",
        "triton: longest wait for a fuller batch, µs, as for simulate (default: the "
        "server's, else 2000)",
    )
    parser.add_argument(
        "--modes",
        help=f"comma-separated, from {', '.join(MODES)} (default: exclusive, plus each mode "
        "whose parameters are given)",
    )
    parser.add_argument("--cotenants", help="time-slicing: co-tenant duty cycles, e.g. 0.9,0.9")
    option(parser, "busy_period_ms", "co-tenants' mean busy period, ms")
    parser.add_argument("--mps-share", help="MPS: our compute share in percent, e.g. 50")
    parser.add_argument(
        "--mig-profile",
        help=f"MIG: a profile of the card, e.g. 3g.40gb, or {ALL_PROFILES} to plan every "
        "profile of the card at once and compare them in one table",
    )
    add_worker_options(parser)
    option(parser, "seeds", "phase seeds per session count")
    option(parser, "duration_s", "simulated seconds per run")
    option(
        parser,
        "max_sessions",
        "largest session count (default: until the first failure, up to 4,096)",
    )
    option(
        parser,
        "search",
        "how each cap is searched: bracketed (its work grows about as N log N in the cap; "
        "docs/design.md) or exhaustive (every count from 1 up to the first failure)",
    )
    parser.add_argument("--peak-sessions", help="peak concurrent sessions, for the fleet size")
    option(parser, "headroom", "fleet headroom fraction")
    parser.add_argument("--price-per-hour", help="card price, USD per hour (default: stored)")
    parser.add_argument(
        "--other-jobs",
        action="store_true",
        help="the rest of the card goes to other jobs (MIG, MPS): count one instance of the "
        "worker per card and charge a seat our fraction of the card (default: the card's "
        "other instances run the same worker)",
    )
    parser.add_argument(
        "--profile",
        metavar="NAME|FILE",
        help="demand over the day: a built-in shape (flat, office-hours, evening-peak; scaled "
        "to --peak-sessions), a stored profile (`planner profiles list`), or a CSV file of "
        "time,sessions; adds the fleet and cost per day, fixed and autoscaled",
    )
    option(
        parser,
        "lead_time_min",
        "autoscaling lead time, minutes from asking for a GPU to it serving",
    )


PLAN_OPTIONS = (
    "budget_ms", "percentile", "min_fps", "source_fps", "max_overwritten", "overhead_ms",
    "policies", "max_batch", "max_queue_delay_us", "modes", "cotenants", "busy_period_ms",
    "mps_share", "mig_profile", "seeds", "duration_s", "max_sessions", "search",
    "peak_sessions", "headroom", "price_per_hour",
    "profile", "lead_time_min", "network_ms", "pre_ms", "post_ms", "cpu_workers",
    "cotenant_memory_mb", "mps_memory_mb", "spread", "queue", "max_queue_size",
    "queue_timeout_us", "timeout_action", "decode_ms", "decoders", "codec", "cpu_decode_ms",
)  # fmt: skip
"""The options of ``add_plan_options`` that are plan parameters, read by their codecs."""


def spread_on(args: argparse.Namespace) -> bool:
    """Whether ``--spread`` leaves batch times spread (its link parameter's codec reads it)."""
    text = getattr(args, "spread", None)
    if text is None:
        return bool(PARAMETERS["spread"].default)
    try:
        return bool(PARAMETERS["spread"].codec.parse(str(text)))
    except BadInput as exc:
        raise BadInput([f"--spread: {p}" for p in exc.problems]) from None


def add_worker_options(parser: argparse.ArgumentParser) -> None:
    """The worker beyond the GPU and the memory the card leaves it (SPEC §5.1), shared by
    ``simulate``, ``recommend`` and ``link``."""
    option(
        parser,
        "spread",
        "batch times spread as the curve's p10/p90 (or std) say: on where the curve has "
        "spread; off (0) runs every batch at the curve's median",
        metavar="on|off",
    )
    option(parser, "network_ms", "one-way network delay, ms; crossed both ways")
    option(parser, "pre_ms", "CPU work per frame before the GPU (decode, resize), ms")
    option(parser, "post_ms", "CPU work per frame after the GPU, ms")
    option(
        parser,
        "cpu_workers",
        "CPU threads doing the pre and post work (0 = unlimited: the stages only delay)",
    )
    option(parser, "decode_ms", "video decoder time per frame on one engine, ms")
    option(
        parser,
        "decoders",
        "video decoder engines (override; unset: the card's or MIG profile's)",
    )
    option(parser, "codec", "the streams' codec: h264/h265 decode every frame, jpeg those taken")
    option(parser, "cpu_decode_ms", "CPU time to decode a frame where there is no decoder, ms")
    parser.add_argument(
        "--cotenant-memory-mb",
        help="time-slicing: GPU memory each co-tenant uses, MB (one for all or one per co-tenant)",
    )
    parser.add_argument("--mps-memory-mb", help="MPS: our client's GPU memory limit, MB")
    for flag, what in (
        ("--cotenant-curve", "a co-tenant given by what it runs: its stored curve id"),
        ("--cotenant-batch", "that co-tenant's batch"),
        ("--cotenant-rps", "that co-tenant's request rate, frames per second"),
    ):
        parser.add_argument(
            flag,
            action="append",
            help=f"time-slicing: {what} (repeat --cotenant-curve, --cotenant-batch and "
            "--cotenant-rps together, once per co-tenant; the answer shows the busy "
            "fraction r / b x L(b) and busy period L(b) they give)",
        )
    parser.add_argument(
        "--cotenant-points",
        action="append",
        dest="cotenant_curve",
        type=_points,
        metavar="BATCH:MS,...",
        help="time-slicing: a co-tenant's curve given as points instead of a stored curve "
        "(--cotenant-curve), e.g. 1:5,4:12; with its --cotenant-batch and --cotenant-rps, "
        "in the order the co-tenants are given",
    )
    parser.add_argument(
        "--cascade",
        action="append",
        metavar="ID[:K|:poisson=MEAN|:hist=FILE][:max=B]",
        help="a model run after the curve's on each batch, on the crops the model before "
        "found: a stored curve id and its crops per input, fixed (K, default 1), Poisson "
        "with a mean, or a histogram (a file of count,share lines, or COUNT:SHARE,... "
        "inline); max=B its largest batch (default: max(64, its largest measured)). "
        "Repeat for a longer chain, in order",
    )
    add_queue_options(parser)
    parser.add_argument(
        "--calibration",
        metavar="latest|none|ID",
        help="the curve's calibration by a load test (`planner loadtest`): latest (the "
        "default for simulate and recommend: the curve's newest, if it has one), none, or a "
        "calibration id; planner link adds one only when asked",
    )


def add_queue_options(parser: argparse.ArgumentParser) -> None:
    """What the server keeps of a session's frames and, under ``--queue all``, its queue
    policy: how a plan serves, shared by every command that plans or simulates."""
    option(
        parser,
        "queue",
        "frames the server keeps: newest (one per session; older ones are overwritten) or "
        "all (every frame queued, as Triton and KServe servers do)",
        choices=list(limits.QUEUES),
    )
    option(parser, "max_queue_size", "queue all: requests waiting at most (unset: no bound)")
    option(parser, "queue_timeout_us", "queue all: longest wait before the timeout action, µs")
    option(
        parser,
        "timeout_action",
        "queue all: reject a timed-out request or delay it",
        choices=list(limits.TIMEOUT_ACTIONS),
    )


def cascade_option(given: list[str] | None) -> tuple[str, ...]:
    """``--cascade`` entries as the plan's link parameter carries them: a histogram file
    read into its inline pairs (BadInput naming the flag otherwise)."""
    entries = []
    # (A link's value is its entries joined by ';', which the command line takes too.)
    for text in [t for g in given or () for t in g.split(";") if t.strip()]:
        head, sep, crops = text.partition(":")
        tail = ""
        if crops.startswith("hist=") and ":" not in crops[5:].split(":max=")[0]:
            name, mark, largest = crops[5:].partition(":max=")
            tail = f":max={largest}" if mark else ""
            try:
                found = Path(name).read_text(encoding="utf-8")
            except OSError as exc:
                raise BadInput(
                    f"--cascade: cannot read the crop histogram {name}: {exc.strerror}"
                ) from None
            try:
                shares = parse_shares(found)
            except BadInput as exc:
                raise BadInput([f"--cascade: {name}: {p}" for p in exc.problems]) from None
            crops = "hist=" + ",".join(f"{c}:{number_text(s)}" for c, s in shares)
        entries.append(f"{head}{sep}{crops}{tail}")
    try:
        return PARAMETERS["cascade"].codec.check(entries)
    except BadInput as exc:
        raise BadInput([f"--cascade: {p}" for p in exc.problems]) from None


def _points(text: str) -> str:
    """``--cotenant-points``: points as their canonical text (argparse names the flag and
    exits 2 otherwise)."""
    try:
        return points_text(text)
    except BadInput as exc:
        raise argparse.ArgumentTypeError("; ".join(exc.problems)) from None


def workload_options(args: argparse.Namespace) -> dict[str, Any]:
    """``--cotenant-curve``, ``--cotenant-batch`` and ``--cotenant-rps`` as link
    parameters (read by their codecs; BadInput naming the flag otherwise)."""
    out: dict[str, Any] = {}
    problems: list[str] = []
    for name in ("cotenant_curve", "cotenant_batch", "cotenant_rps"):
        given = getattr(args, name, None)
        if not given:
            continue
        # Curves are ';'-separated where points (which hold commas) are among them.
        joined = ";".join(given) if name == "cotenant_curve" else ",".join(given)
        try:
            out[name] = PARAMETERS[name].codec.check(joined)
        except BadInput as exc:
            problems.extend(option_name(f"{name}: {p}") for p in exc.problems)
    if problems:
        raise BadInput(problems)
    return out


def flag_spelling(name: str, value: object = None) -> str:
    """A parameter, or a parameter and its value, as the command line writes it:
    ``--queue all`` (``planner.plan.params.link_spelling`` in a link)."""
    flag = f"--{name.replace('_', '-')}"
    return flag if value is None else f"{flag} {value}"


def plan_params(args: argparse.Namespace) -> PlanParams:
    """Validated plan parameters from the options (BadInput lists every problem)."""
    # A profile given as a file is read by ``planning.plan_profile``, not named in the plan.
    names = [n for n in PLAN_OPTIONS if n != "profile" or profile_file(args) is None]
    values = link_values(args, names)
    values["other_jobs"] = bool(args.other_jobs)
    values["cascade"] = cascade_option(getattr(args, "cascade", None))
    values.update(workload_options(args))
    values["margin"] = margin_of(args)
    if args.points is not None:
        values["points"] = parse_points_option(args.points)
        if args.card:
            values["card"] = args.card
        if args.model:
            values["model"] = args.model
    else:
        if args.model:
            raise BadInput("--model names the model of --points; a stored curve names its own")
        values["curve"] = args.curve
    queue = queue_conflicts(values, flag_spelling)  # in the options' own words
    unused = batcher_unused(values)
    if queue or unused:
        raise BadInput([message for _, message in queue] + unused)
    try:
        return PlanParams(**values)
    except BadInput as exc:
        raise BadInput([option_name(p) for p in exc.problems]) from None


def margin_of(args: argparse.Namespace) -> int | None:
    """The margin version ``--margin`` names: the current one by default, ``none`` for
    none (SPEC §6.2)."""
    text = getattr(args, "margin", None)
    if text is None:
        return limits.UNCALIBRATED_MARGIN
    try:
        return PARAMETERS["margin"].codec.parse(str(text))
    except BadInput as exc:
        raise BadInput([f"--margin: {p}" for p in exc.problems]) from None


def batcher_unused(values: dict[str, Any]) -> list[str]:
    """A batcher setting given to a plan none of whose policies takes it (as ``simulate``
    refuses it for a policy that does not take it)."""
    policies = values.get("policies") or PARAMETERS["policies"].default
    out = []
    for name in ("max_batch", "max_queue_delay_us"):
        takers = [p for p in POLICIES if name in POLICIES[p].params]
        if values.get(name) is not None and not set(takers) & set(policies):
            out.append(
                f"{flag_spelling(name)} applies to {' and '.join(takers)} only, which "
                "--policies leaves out"
            )
    return out


def recommend_showing_progress(request: Request, *, quiet: bool = False) -> Recommendation:
    """``recommend``, saying how far it has got on standard error while it runs when that
    is a terminal (a line redrawn in place, erased at the end); silent with ``quiet``
    (``--json``) and where standard error is a file or a pipe. A search of thousands of
    session counts runs for minutes: the line shows it works, and that Ctrl-C stops it."""
    line = StatusLine(sys.stderr, interval_s=0.5)
    if quiet or not line.terminal:
        return recommend(request)
    started = time.monotonic()

    def report(work: Work) -> None:
        if line.due():
            line.draw(
                f"planning: {work.done / 1e6:,.1f} million frames simulated in "
                f"{time.monotonic() - started:,.0f} s (Ctrl-C stops)"
            )

    try:
        # No budget on the command line: the account only counts, for the line.
        return recommend(request, work=Work(budget=math.inf, on_chunk=report))
    finally:
        line.close()
