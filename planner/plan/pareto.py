"""Which options are worth considering: seats per card against latency at the cap (Pareto
dominance).

More seats per card are better and a lower latency at the cap is better. An option is *dominated*
when another holds at least as many seats at no higher latency, and is strictly better in
one of the two; nobody needs a dominated option unless it brings something the two
numbers leave out (isolation, for instance, which the dashboard shows next to it).
Options that hold no seat have no latency at a cap and are left out of the comparison.
"""

from __future__ import annotations

from collections.abc import Sequence

from planner.plan.outcomes import Option


def latency_at_cap(option: Option) -> float | None:
    """The end-to-end latency percentile at the option's cap, or None without a seat."""
    if option.cap < 1 or option.at_cap is None:
        return None
    return option.at_cap.e2e_latency_ms


def dominated(options: Sequence[Option]) -> list[Option | None]:
    """For each option, the first option that dominates it, or None if none does.

    Equal options (same seats, same latency) do not dominate each other.
    """
    points = [(o.seats_per_card, latency_at_cap(o)) for o in options]
    out: list[Option | None] = []
    for seats, latency in points:
        winner = None
        if latency is not None:
            for other, (o_seats, o_latency) in zip(options, points, strict=True):
                if o_latency is None:
                    continue
                if (
                    o_seats >= seats
                    and o_latency <= latency
                    and (o_seats > seats or o_latency < latency)
                ):
                    winner = other
                    break
        out.append(winner)
    return out
