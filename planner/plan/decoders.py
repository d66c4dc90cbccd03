"""The decoders a plan's worker decodes its streams on (SPEC §6.3), option by option.

A plan asks for a decode stage with a time per frame on a decoder engine
(``decode_ms``), or on the CPU (``cpu_decode_ms``), or both; without either there is no
decode stage, as in every plan before it. The engine count is the one given
(``decoders``), else the catalogue's (``planner.curves.decoders``) for the whole card,
or, under MIG, for the instance's profile. Where that count is 0 (an A100 ``1g.5gb``,
an A30 ``1g.6gb``) decoding runs on the CPU threads and needs ``cpu_decode_ms``; where
no source gives it, decoding is a delay that never queues and the answer says so (the
count, ``decoders``, turns it into engines that can bind).

Decoders bind like any stage: N sessions at ``fps`` give the engines ``N x fps`` frames
per second to decode (every frame of a video stream; of a JPEG stream under ``queue =
newest``, at least the ``min_fps`` each session must get), and E engines of ``d`` ms
decode at most ``E x 1000 / d``. A count that reaches that is not searched: it fails
with "the video decoders are busy 100%: more GPU does not add a seat"
(``planner.plan.recommend``), the way a server whose queue would grow does.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from planner import display, limits
from planner.curves.decoders import decoder_count
from planner.errors import BadInput
from planner.sim.decode import CODECS, DEFAULT_CODEC, VIDEO_CODECS, Decoding
from planner.sim.sharing import Sharing, instances_per_card

BUSY_REASON = "the video decoders are busy 100%: more GPU does not add a seat"


@dataclass(frozen=True)
class Decoders:
    """A plan's decode stage before it meets a card: the times given, the codec, the
    engine count given (None: the catalogue's) and the card the catalogue is read for."""

    decode_ms: float | None = None
    cpu_decode_ms: float | None = None
    codec: str = DEFAULT_CODEC
    given: int | None = None
    card: str | None = None

    def __post_init__(self) -> None:
        problems = []
        if self.codec not in CODECS:
            problems.append(f"codec: {self.codec!r} is not one of {', '.join(CODECS)}")
        if self.given is not None and self.given > 0 and self.decode_ms is None:
            problems.append(
                "decoders: a decoder count needs decode_ms, each engine's time per frame"
            )
        if self.given == 0 and self.cpu_decode_ms is None:
            problems.append("decoders: 0 decoders (decoding on the CPU) needs cpu_decode_ms")
        if problems:
            raise BadInput(problems)

    @classmethod
    def given_as(cls, values: Mapping[str, Any], card: str | None) -> Decoders | None:
        """The decode stage the parameters ``decode_ms``, ``cpu_decode_ms``, ``codec`` and
        ``decoders`` of ``values`` describe, on ``card``; None without a decode time."""
        if values.get("decode_ms") is None and values.get("cpu_decode_ms") is None:
            return None
        return cls(
            decode_ms=values.get("decode_ms"),
            cpu_decode_ms=values.get("cpu_decode_ms"),
            codec=values.get("codec") or DEFAULT_CODEC,
            given=values.get("decoders"),
            card=card,
        )

    def engines(self, sharing: Sharing) -> int | None:
        """The engines the card (for a MIG profile, one instance of it) has: given, or
        the catalogue's; None when unknown. Only the CPU's time given, 0. The catalogue
        counts video decoders (NVDEC); JPEG has engines of its own on most cards (NVJPG),
        which it does not hold, so a JPEG stream's count is unknown unless given."""
        if self.given is not None:
            return self.given
        if self.decode_ms is None:
            return 0
        if self.codec not in VIDEO_CODECS:
            return None
        profile = mig_profile(sharing)
        if profile == "":
            return None  # a MIG slice named by no profile
        count = decoder_count(self.card, profile)
        return None if count is None else count.nvdec

    def decoding(self, sharing: Sharing) -> Decoding:
        """The decode stage of one instance of ``sharing`` (BadInput saying what to give
        where it has no decoder and no CPU time is given; engines None, a delay, where
        the catalogue does not know its count). Under a mode whose several instances
        share one card's decoders (MPS: every client sees them all), each instance gets
        its share (``shared``)."""
        engines = self.engines(sharing)
        where = sharing.label
        if engines == 0:
            if self.cpu_decode_ms is None:
                raise BadInput(
                    f"cpu_decode_ms: {where} has no video decoder, so decoding runs on the "
                    "CPU; give the CPU's time to decode a frame"
                )
            return Decoding(decode_ms=self.cpu_decode_ms, engines=0, codec=self.codec)
        assert self.decode_ms is not None  # engines > 0 or unknown come from decode_ms
        if engines is not None and sharing_clients(sharing) > 1:
            return shared(Decoding(self.decode_ms, engines, self.codec), sharing_clients(sharing))
        return Decoding(decode_ms=self.decode_ms, engines=engines, codec=self.codec)

    def sentence(self, sharing: Sharing) -> str:
        """What one instance of ``sharing`` decodes on, in words."""
        decoding = self.decoding(sharing)
        if not decoding.known and self.given is None and self.codec not in VIDEO_CODECS:
            return (
                f"{sharing.label}: JPEG is decoded on engines of its own on most cards "
                "(NVJPG), which the catalogue does not count, so decoding is taken as a "
                f"delay of {display.ms(decoding.decode_ms)} a frame that never queues (give "
                "decoders to count them)"
            )
        if not decoding.known:
            return (
                f"{sharing.label}: how many video decoders it has on "
                f"{self.card or 'this card'} is in no source the catalogue holds, so "
                f"decoding is taken as a delay of {display.ms(decoding.decode_ms)} a frame "
                "that never queues (give decoders to count them)"
            )
        if decoding.on_cpu:
            return (
                f"{sharing.label}: no video decoder, so decoding runs on the CPU threads "
                f"({display.ms(decoding.decode_ms)} a frame)"
            )
        engines = "1 video decoder" if decoding.engines == 1 else (
            f"{decoding.engines} video decoders"
        )  # fmt: skip
        source = "" if self.given is not None else _source(self.card, sharing)
        clients = sharing_clients(sharing)
        if clients > 1:
            card = self.engines(sharing)
            return (
                f"{sharing.label}: the card's {card} video decoder{'' if card == 1 else 's'}"
                f"{source} shared by its {clients} clients, each decoding at most "
                f"{display.count(decoding.capacity_fps)} frames/s (as {engines} of "
                f"{display.ms(decoding.decode_ms)} a frame)"
            )
        return (
            f"{sharing.label}: {engines} of {display.ms(decoding.decode_ms)} a frame, at most "
            f"{display.count(decoding.capacity_fps)} frames/s{source}"
        )


def sharing_clients(sharing: Sharing) -> int:
    """How many instances of the worker share one card's decoders: under a mode with
    several instances per card that is not MIG (MPS), all of them; else 1 (a MIG
    instance has decoders of its own, and the whole card's are one worker's)."""
    if not sharing.kind.several_per_card or mig_profile(sharing) is not None:
        return 1
    return max(1, instances_per_card(sharing))


def shared(decoding: Decoding, clients: int) -> Decoding:
    """One of ``clients`` instances' share of ``decoding``'s engines, as engines of its
    own with the same capacity: ``ceil(E / clients)`` engines, each ``clients x engines /
    E`` times the decode time (never less than it), so that the clients together decode
    what the card's E engines do (each client's frames wait as if it had its share to
    itself, which under-states a decoder's wait only where the clients' frames arrive
    together)."""
    own = math.ceil(decoding.engines / clients) if decoding.engines else 0
    if not own:
        return decoding
    assert decoding.engines is not None
    return Decoding(
        # At most the longest stage time: a share too small to decode anything is one.
        decode_ms=min(decoding.decode_ms * clients * own / decoding.engines, limits.STAGE_MS.high),
        engines=own,
        codec=decoding.codec,
    )


def mig_profile(sharing: Sharing) -> str | None:
    """The MIG profile of ``sharing`` (``""`` for a MIG slice named by none), or None when
    the instance is the whole card."""
    if sharing.kind.name != "mig":
        return None
    return str(getattr(sharing.kind.settings_of(sharing), "mig_profile", None) or "")


def _source(card: str | None, sharing: Sharing) -> str:
    count = decoder_count(card, mig_profile(sharing))
    return "" if count is None else f" (count: {count.source})"


def decoded_rate(
    decoding: Decoding, sessions: int, fps: float, min_fps: float, queue: str
) -> float:
    """Frames per second the engines must decode at ``sessions``: every frame of a video
    stream (or under ``queue = all``); of a JPEG stream, at least ``min_fps`` each."""
    if decoding.every_frame or queue == "all":
        return sessions * fps
    return sessions * min(min_fps, fps)


def decoders_upto(decoding: Decoding, fps: float, min_fps: float, queue: str, largest: int) -> int:
    """The largest count up to ``largest`` whose frames the engines can decode (below
    100% busy); ``largest`` when they never bind (on the CPU, or nothing to decode)."""
    if math.isinf(decoding.capacity_fps):
        return largest
    per_session = decoded_rate(decoding, 1, fps, min_fps, queue)
    if per_session <= 0:
        return largest
    most = decoding.capacity_fps / per_session
    upto = math.ceil(most) - 1  # strictly below the capacity
    return max(0, min(largest, upto))


def busy_reason(decoding: Decoding, sessions: int, fps: float, min_fps: float, queue: str) -> str:
    """Why ``sessions`` fails on the decoders, in words."""
    rate = decoded_rate(decoding, sessions, fps, min_fps, queue)
    engines = "1 decoder" if decoding.engines == 1 else f"{decoding.engines} decoders"
    return (
        f"{BUSY_REASON} ({display.count(rate)} frames/s to decode; {engines} of "
        f"{display.ms(decoding.decode_ms)} decode at most "
        f"{display.count(decoding.capacity_fps)})"
    )


def decoders_note(decoders: Decoders, sharings: tuple[Sharing, ...]) -> str:
    """The plan's assumption about decoding, with what each option's instance decodes on
    (a MIG profile without a decoder: on the CPU)."""
    codec = decoders.codec
    what = (
        f"{codec} streams: every frame is decoded, whatever the worker later drops"
        if codec != "jpeg"
        else "JPEG frames: only the frames taken are decoded (a newer frame replaces one "
        "waiting for a decoder)"
    )
    each = "; ".join(decoders.sentence(s) for s in sharings)
    return (
        f"Decoding comes before the CPU's pre stage ({what}), first come first served on "
        f"the decoders. {each}."
    )


def decoder_notes(results: Any) -> tuple[str, ...]:
    """What a run's decode stage did, in words (none without one): how busy the decoders
    were (and that they fell behind, naming them, at 100%), or that decoding ran on the
    CPU threads, or that the decoders' count is unknown and decoding a delay."""
    scenario = results.scenario
    decoding = getattr(scenario, "decode", None)
    if decoding is None:
        return ()
    ms = display.ms(decoding.decode_ms)
    if decoding.on_cpu:
        return (f"Decoding ran on the CPU threads, {ms} a frame (no video decoder here).",)
    if not decoding.known:
        return (
            f"How many decoders this instance has is not known, so decoding was taken as a "
            f"delay of {ms} a frame that never queues (give decoders to count them).",
        )
    if decoding.every_frame or scenario.queue == "all":
        rate = float(sum(scenario.session_fps))
        what = "every frame sent"
    else:
        rate = float(sum(s.fps for s in results.sessions))
        what = "the frames taken"
    busy = decoding.busy_fraction(rate)
    engines = "1 decoder" if decoding.engines == 1 else f"{decoding.engines} decoders"
    figures = (
        f"{display.count(rate)} frames/s to decode ({what}); {engines} of {ms} decode at "
        f"most {display.count(decoding.capacity_fps)}"
    )
    if busy >= 1.0:
        return (f"{BUSY_REASON[0].upper()}{BUSY_REASON[1:]} ({figures}); they fall behind.",)
    return (f"The video decoders were {display.fraction(busy)} busy ({figures}).",)
