"""A plan's answer in words, composed once for every front (SPEC §3.5, §5.3).

The answer is what a person reads first: the headline (seats per card and the option that
holds them), one plain sentence for whoever decides (``plain``: how many live cameras a
card serves at the source's frame rate within the budget, and what one more would get,
read off the run the cap search already made at the first failing count), why the seat
cap is what it is, how seats per card follow from the worker's instances, whether
extrapolated batch sizes decided it, which batch size to measure next, whether the
percentile at the cap is firm, and the assumptions it all rests on.

The *why* is the next seat's failure in the recommendation's words (the latency budget
named first, then the frame-rate floor, then overwriting, the others after "also"); when
the fit's band makes the cap a range, it is the range explained edge by edge: the cap on
the band's pessimistic edge, on the fitted curve and on its optimistic edge, each with
the failure that ends it. When no option holds one session, it names the option that came
closest.

The Plan page, the report (HTML and Markdown) and ``planner recommend``'s text each render
this one ``Answer`` and add only pointers to their own controls, so the three cannot say
different things. The sentences are plain text, not Markdown: each renderer escapes them
as its format needs.
"""

from __future__ import annotations

from dataclasses import dataclass

from planner import display
from planner.plan import margin
from planner.plan.outcomes import Option, Recommendation
from planner.plan.request import Request
from planner.sim.sweep import Pooled


@dataclass(frozen=True)
class Paragraph:
    """A lead said first (bold where the format has bold), the text after it, and the
    items of a list that follows (empty for none)."""

    lead: str
    text: str = ""
    items: tuple[str, ...] = ()

    @property
    def sentence(self) -> str:
        """The lead and the text as one line of plain text."""
        return " ".join(part for part in (self.lead, self.text) if part)


@dataclass(frozen=True)
class Answer:
    """A plan's answer as plain sentences (see the module docstring).

    ``instances`` is None when a card holds one instance of the worker; ``extrapolated``
    and ``low_confidence`` are None when they do not apply. ``measure_next`` always says
    which batch to measure next, or that none is worth it, and relative to what.
    """

    headline: str
    plain: str
    why: Paragraph
    instances: Paragraph | None
    extrapolated: str | None
    measure_next: str
    low_confidence: str | None
    assumptions: tuple[str, ...]

    @property
    def sentences(self) -> tuple[str, ...]:
        """Every line of the answer as plain text, in the order the fronts show them."""
        out = [self.headline, self.plain]
        if self.instances is not None:
            out.append(self.instances.sentence)
        out += [self.why.sentence, *self.why.items]
        out += [s for s in (self.extrapolated, self.measure_next, self.low_confidence) if s]
        return (*out, *self.assumptions)


def plan_answer(result: Recommendation) -> Answer:
    """The answer of ``result``, from the recommendation alone (its request holds the
    fitted curve, whose description is the first assumption)."""
    best = result.recommended
    request = result.request
    shown = best if best is not None else result.closest
    measured = [p.batch for p in request.curve_for(shown.sharing).points] if shown else []
    at = best.at_cap if best is not None else None
    return Answer(
        headline=headline(best),
        plain=plain_sentence(result),
        why=_why(best) if best is not None else _closest(shown),
        instances=_instances(best),
        extrapolated=(
            f"This cap rests on batch sizes beyond the measured {display.batches(measured)}, "
            "where the curve is extrapolated."
            if best is not None and best.extrapolated
            else None
        ),
        measure_next=(
            f"Measure with {margin.LOAD_TEST} next, relative to {result.measure_next_basis}."
            if best is not None and best.margin_sets_low
            else f"No batch size is worth measuring next, relative to {result.measure_next_basis}."
            if result.measure_next is None
            else f"Measure batch {result.measure_next} next, relative to "
            f"{result.measure_next_basis}."
        ),
        low_confidence=(
            f"The p{at.percentile:g} at the cap rests on fewer than 10 frames beyond it; "
            "more random phase draws or a longer duration make it firmer."
            if at is not None and at.low_confidence
            else None
        ),
        assumptions=(request.curve.description, *result.assumptions),
    )


def headline(best: Option | None) -> str:
    """``3 seats per card — oldest-first, exclusive``, or that no seat fits."""
    if best is None:
        return "No seat fits these criteria"
    text = f"{best.seats} {'seat' if best.seats == '1' else 'seats'} per card — {best.label}"
    if best.margin is not None:
        text += f" ({margin.uncalibrated_note(best)})"
    return text


ORDINALS = ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth",
            "ninth", "tenth", "eleventh", "twelfth")  # fmt: skip


def ordinal(n: int) -> str:
    """``sixth`` up to twelve, then ``21st``, ``112th``."""
    if 1 <= n <= len(ORDINALS):
        return ORDINALS[n - 1]
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def plain_sentence(result: Recommendation) -> str:
    """The answer in one sentence for whoever decides, before the engineering terms:
    ``Each card serves 5 live cameras at 30 fps with 99% of answers within 50 ms; a sixth
    camera would leave the slowest at 26.0 fps.`` What one more camera gets is read off
    the run the cap search made at the first failing count (no run is made for it); when
    the search stopped at its largest count, or the band makes the cap a range, the
    sentence says so instead of naming a figure it did not simulate."""
    request = result.request
    criteria = request.criteria
    source = f"{display.fps(request.fps)}"
    share = display.fraction(criteria.percentile / 100)
    within = f"{share} of answers within {display.ms(criteria.budget_ms)}"
    best = result.recommended
    if best is None:
        return f"A card cannot serve even one live camera at {source} with {within}."
    cameras = "camera" if best.seats == "1" else "cameras"
    text = f"Each card serves {best.seats} live {cameras}"
    where = ""
    if best.per_card > 1:
        unit = best.sharing.kind.instance_name
        text += f" ({best.seats_per_instance} on each of its {best.per_card} {unit}s)"
        where = f" on one {unit}"
    at = best.at_cap
    text += f" at {source}"
    if at is not None and at.min_fps < 0.95 * request.fps:
        text += f" (the slowest gets {display.fps(at.min_fps)})"
    text += f" with {within}"
    if not best.cap_low == best.cap == best.cap_high:
        return text + "; how many exactly depends on how fast the card really is (see why below)."
    failing = best.history[-1] if best.history else None
    if not best.failures:
        return text + "; the search stopped there, at the largest count considered."
    nxt = f"a {ordinal(best.cap + 1)} camera{where}"
    if failing is None or failing.sessions != best.cap + 1:
        # Failed without a run: the stability condition (planner.plan.stability).
        return f"{text}; {nxt} would make the queue grow without end."
    return f"{text}; {nxt} would {_one_more(failing, request)}."


def _one_more(failing: Pooled, request: Request) -> str:
    """What the first failing count's run gives, in the first criterion it fails."""
    criteria = request.criteria
    if failing.e2e_latency_ms is None:
        return "get no answer at all"
    if failing.e2e_latency_ms > criteria.budget_ms:
        if failing.queue_grows:
            return "make the queue grow without end"
        share = display.fraction(criteria.percentile / 100)
        return (
            f"slow answers to {display.ms(failing.e2e_latency_ms)} ({share} within), past "
            f"the {display.ms(criteria.budget_ms)} budget"
        )
    if failing.min_fps < criteria.min_fps:
        return f"leave the slowest at {display.fps(failing.min_fps)}"
    return (
        f"see {display.fraction(failing.overwritten_fraction)} of frames replaced by newer "
        "ones before they run"
    )


def _why(best: Option) -> Paragraph:
    """Why the cap is what it is: the next seat's failure, or for a range, the failure at
    each end of it (the fitted curve and the band's edges each fail somewhere else)."""
    unit = "" if best.per_card == 1 else " per instance"
    if best.cap_low == best.cap == best.cap_high:
        if best.failures:
            return Paragraph(f"Why not {best.cap + 1}{unit}?", _sentence(best.binding_constraint))
        return Paragraph("No limit found:", f"it {best.binding_constraint}.")
    # Uncalibrated, the low end can be the model's error rather than the band's edge.
    widened = (best.cap_low, "Until a load test calibrates the curve", margin.low_end_reason(best))
    ends = (
        *((widened,) if best.margin_sets_low else ()),
        (best.band_cap_low, "If the card is as slow as the band's pessimistic edge",
         best.edge_constraint("pessimistic")),
        (best.cap, "On the fitted curve", best.binding_constraint),
        (best.cap_high, "If it is as fast as the band's optimistic edge",
         best.edge_constraint("optimistic")),
    )  # fmt: skip
    items = tuple(
        f"{where}, {cap} session{'s' if cap != 1 else ''} hold{'' if cap != 1 else 's'}"
        f"{unit}: {reason}."
        for cap, where, reason in ends
        if reason is not None
    )
    lead = (
        "The measured points leave the curve uncertain, so the cap depends on how fast the "
        "card really is inside the fit's band"
    )
    if best.margin_sets_low:
        lead += ", and until a load test calibrates it the range also carries the model's error"
    return Paragraph(f"Why {best.seats_per_instance}{unit}?", lead + ":", items)


def _closest(option: Option | None) -> Paragraph:
    """With nothing recommended: the option that came closest at one session, and why it
    fails there."""
    if option is None:  # pragma: no cover - a recommendation always has options
        return Paragraph("Not even one session meets them.")
    return Paragraph(
        "Not even one session meets them.",
        f"The closest is {option.label}: {option.binding_constraint}.",
    )


def _instances(best: Option | None) -> Paragraph | None:
    """How seats per card follow from the cap, where a card holds several instances."""
    if best is None or not best.instances_note:
        return None
    return Paragraph(f"{best.instances_note}:", "the card's other instances run the same worker.")


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:] + ("" if text.endswith(".") else ".")
