"""Which option comes first (the ranking) and which are worth considering (Pareto
dominance): seats per card against latency at the cap, read on the whole seat range.

**Ranking** (SPEC §3.5): the likely seats per card first, then the low end of the range,
then the latency at the cap, then the order the policies (and sharing modes) were listed
in. The low end is the range's, so on an uncalibrated plan it is the margin's (SPEC §6.2):
two options with the same likely count whose band edges differ only above the margin's
low end tie there, and the latency decides; calibrated, the band's low edge decides.

**Dominance.** More seats per card are better and a lower latency at the cap is better.
An option's seats are a range (``Option.seats_span``): the low end (the band's pessimistic
edge, or, on an uncalibrated plan, the margin's ``min(band low, floor(m x cap))``:
``planner.plan.margin``), the likely value on the fitted curve, and the high end on the
band's optimistic edge. Which of them the card turns out to hold is not known, so an
option is *dominated* only when another is no worse whichever it is: at least as many
seats at the low end, at the likely value and at the high end, at no higher latency, and
strictly better in one of these. An option whose likely value is higher but whose low end
is lower (a wider band, say) dominates nothing: it promises more but could hold fewer, and
a user who must not over-promise may prefer the other.

Nobody needs a dominated option unless it brings something these numbers leave out
(isolation, for instance, which the dashboard shows next to it). Options that hold no seat
have no latency at a cap and are left out of the comparison.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from planner.plan.outcomes import Option
from planner.sim.scenario import Sharing


def rank(
    options: Sequence[Option], policies: Sequence[str], sharings: Sequence[Sharing]
) -> list[Option]:
    """``options`` in the order of the ranking (see the module docstring); ``policies``
    and ``sharings`` are the request's, whose order breaks the last ties."""
    order = {p: i for i, p in enumerate(policies)}
    modes = {s: i for i, s in enumerate(sharings)}

    def key(o: Option) -> tuple[int, int, float, int, int]:
        at = o.at_cap
        latency = at.e2e_latency_ms if at and at.e2e_latency_ms is not None else math.inf
        return (-o.seats_per_card, -o.seats_per_card_low, latency, order[o.policy],
                modes[o.sharing])  # fmt: skip

    return sorted(options, key=key)


def latency_at_cap(option: Option) -> float | None:
    """The end-to-end latency percentile at the option's cap, or None without a seat."""
    if option.cap < 1 or option.at_cap is None:
        return None
    return option.at_cap.e2e_latency_ms


def seat_range(option: Option) -> tuple[int, int, int]:
    """Seats per card at the low end, the likely value and the high end of the range
    (the uncalibrated range where a margin applies: ``Option.seats_span``)."""
    return option.seats_per_card_low, option.seats_per_card, option.seats_per_card_high


def dominates(winner: Option, other: Option) -> bool:
    """Whether ``winner`` dominates ``other`` (see the module docstring). Equal options
    (same seat range, same latency) do not dominate each other."""
    mine, theirs = latency_at_cap(winner), latency_at_cap(other)
    if mine is None or theirs is None:
        return False
    seats, other_seats = seat_range(winner), seat_range(other)
    no_worse = mine <= theirs and all(a >= b for a, b in zip(seats, other_seats, strict=True))
    return no_worse and (mine < theirs or seats != other_seats)


def dominated(options: Sequence[Option]) -> list[Option | None]:
    """For each option, the first option that dominates it, or None if none does."""
    return [next((o for o in options if dominates(o, option)), None) for option in options]
