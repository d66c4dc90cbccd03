"""``planner cards``: the card catalogue and hourly prices."""

from __future__ import annotations

import argparse

from planner import display
from planner.cli.output import note, open_store, print_json, table


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("cards", help="list cards, set a card's hourly price")
    commands = parser.add_subparsers(dest="cards_command", metavar="ACTION", required=True)

    listing = commands.add_parser("list", help="list the card catalogue")
    listing.add_argument("--json", action="store_true", help="print JSON")
    listing.set_defaults(handler=list_cards)

    price = commands.add_parser(
        "set-price",
        help="set a card's hourly price (USD), used for cost per seat",
        description="Prices are never shipped with the planner: set the one you pay.",
    )
    price.add_argument("name", help="card name (see `planner cards list`)")
    price.add_argument("usd_per_hour", help="price in USD per GPU-hour, e.g. 2.50")
    price.add_argument("--json", action="store_true", help="print the card as JSON")
    price.set_defaults(handler=set_price)


def list_cards(args: argparse.Namespace) -> int:
    with open_store(args) as store:
        cards = store.cards()
    if args.json:
        print_json([c.as_dict() for c in cards])
        return 0
    rows = [
        (
            c.name,
            "-" if c.memory_gb is None else f"{c.memory_gb:g} GB",
            ", ".join(p.name for p in c.mig_profiles) if c.mig else "no",
            display.money(c.price_per_hour),
        )
        for c in cards
    ]
    print(table(rows, ("card", "memory", "MIG profiles", "price")))
    return 0


def set_price(args: argparse.Namespace) -> int:
    with open_store(args) as store:
        card = store.set_price(args.name, args.usd_per_hour)
    if args.json:
        print_json(card.as_dict())
    else:
        note(f"{card.name}: {display.money(card.price_per_hour)} per hour")
    return 0
