"""``planner link``: the dashboard link that opens a plan, from the options of
``planner recommend``."""

from __future__ import annotations

import argparse
from dataclasses import replace
from urllib.parse import urlsplit

from planner.cli.output import note, open_store, print_json
from planner.cli.planning import add_plan_options, plan_params, profile_file, with_calibration
from planner.errors import BadInput
from planner.links.urls import encode, saved_params, saved_plan_url, self_contained, url
from planner.plan.params import PlanParams
from planner.plan.resolve import pin_batcher, plan_curve, plan_inputs
from planner.store.repository import Store

DEFAULT_BASE = "http://localhost:8501"


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "link",
        help="print the dashboard link that opens a plan",
        description=(
            "Print the link that opens this plan on the dashboard's Plan page, with the same "
            "options as `planner recommend`. Without --curve or --points the link opens the "
            "page's default curve. --self-contained embeds the curve's points, so the link "
            "works against any server; --save stores the plan and prints its short link "
            "(?plan=ID), which works against this store's dashboard."
        ),
    )
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--curve", metavar="ID", help="a stored curve (see `planner curves list`)")
    source.add_argument(
        "--points", metavar="B:MS,...", help='measured points, e.g. "1:9.82,2:20.36,4:46.15"'
    )
    add_plan_options(parser)
    parser.add_argument(
        "--base",
        default=DEFAULT_BASE,
        metavar="URL",
        help=f"where the dashboard is served (default {DEFAULT_BASE})",
    )
    parser.add_argument(
        "--self-contained",
        action="store_true",
        help="embed the curve's points and labels instead of its id",
    )
    parser.add_argument(
        "--save", action="store_true", help="store the plan and print its short link"
    )
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.set_defaults(handler=run)


def clean_base(text: str) -> str:
    """The dashboard's address: ``http(s)://host[:port][/path]``, without a query."""
    try:
        parts = urlsplit(text.strip())
        parts.port  # noqa: B018 - reading it checks the port and an IPv6 host's brackets
    except ValueError as exc:  # "http://[::1" or a port that is no number
        raise BadInput(f"--base {text[:80]!r} is not a valid address ({exc})") from None
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise BadInput(f"--base {text!r} is not an http:// or https:// address")
    if parts.query or parts.fragment:
        raise BadInput(f"--base {text!r} must not carry a query or a fragment")
    return f"{parts.scheme}://{parts.netloc}{parts.path}".rstrip("/")


def run(args: argparse.Namespace) -> int:
    base = clean_base(args.base)
    if profile_file(args) is not None:
        raise BadInput(
            f"--profile {args.profile!r} is a file, and a link can only name a built-in shape "
            "or a stored profile; store it first with `planner profiles add NAME --file FILE`"
        )
    params = plan_params(args)
    # A plain link needs no store, so it can be printed while the dashboard holds the file.
    # A calibration is pinned only when asked for (it must be looked up in the store).
    needs_store = bool(
        args.save
        or (args.self_contained and params.points is None)
        or (args.card and args.curve)
        or args.calibration is not None
    )
    plan_id: str | None = None
    if needs_store:
        with open_store(args) as store:
            params, plan_id = _resolve(args, params, store)
    address = saved_plan_url(base, plan_id) if plan_id else url(base, params)
    if args.json:
        print_json(
            {
                "url": address,
                "plan_id": plan_id,
                "self_contained": params.points is not None,
                "params": encode(params),
            }
        )
        return 0
    if plan_id:
        note(f"saved plan {plan_id}; the link opens it on a dashboard that uses this store")
    print(address)
    return 0


def _resolve(
    args: argparse.Namespace, params: PlanParams, store: Store
) -> tuple[PlanParams, str | None]:
    """Check the plan against the store; embed the curve or save the plan as asked."""
    if args.card and args.curve:
        stored = store.curve(args.curve)
        if stored.card.lower() != args.card.strip().lower():
            raise BadInput(f"--card {args.card} differs from the stored curve's card {stored.card}")
    params = with_calibration(params, args, store, default="none")
    plan_inputs(params, store)  # unknown curve, MIG on a card without it, ...: exit 2 now
    # A curve measured on a server: the link pins the batcher settings the plan takes.
    params = pin_batcher(params, plan_curve(params, store))
    if args.self_contained and params.points is None:
        params = self_contained(params, plan_curve(params, store))
    if args.save:
        if params.curve is None and params.points is None:
            # Pin the default curve: a later default must not change a saved plan.
            params = replace(params, curve=plan_curve(params, store).id)
        return params, store.save_plan(saved_params(params))
    return params, None
