"""The frames pending for the GPU, as the policies see them at a decision (SPEC §3.3).

A session holds at most one pending frame, so the pending frames are a set of sessions,
each with the time its frame became pending. The policies ask four things of it: how
many there are, the oldest ones (ties to the lower session), the next session at or after
a given one (round-robin), and all of them in session order (batch-all). An array with a
time per session answers all four by scanning every session, which at 1,024 sessions cost
the fast engine more than everything else at each decision; this set answers each in
time that does not grow with the session count (beyond a word per 1,024 sessions), so a
frame costs about the same at any count.

A ``Pending`` is two arrays: ``at``, each session's time (+inf: no frame), as the engines
kept it before; and ``slots``, one integer array (one array rather than several, because
every array a compiled function receives may cost it a reference count at each call)
holding, after a header:

- a queue of sessions in the order their frames became pending, which is (time, session)
  order: the engines add frames that way. A frame's entry stays where it is when the
  frame leaves (taken, expired or replaced by a newer one) and is skipped from then on, so
  the live entries stay in (time, session) order and the oldest frames are the first live
  ones; the head only moves forward past dead entries. When the queue reaches the end of
  its space (four entries per session), the live entries, at most one per session, move to
  its start in order: each entry is so passed over a bounded number of times, and the set
  takes the same small space however long the run;
- each session's live position in the queue (-1: none), which tells the live entries;
- the sessions with a frame as bits, 32 to a word, the words that are not empty as bits
  of summary words, and the summary words that are not empty as bits of a top word: the
  next session from a given one in a few steps without a loop, and all of them in order
  without looking at empty words.

Words hold 32 bits in 64-bit integers, so the same code runs compiled and, where Numba
is missing (the reference worker on a bare GPU image), as plain Python on NumPy integers.
``of_times`` builds the set from an array of one time per session, for the callers that
keep their frames that way (the reference engine and the worker).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from planner.sim.jit import jit

# The header of ``slots``: the queue's head and tail (positions in ``slots``: no live
# entry before the head; the next entry goes at the tail), how many sessions have a frame,
# the session count, where the bits and the summary words start, how many summary words
# there are, where the queue's space starts (it runs to the end of ``slots``), and the top
# word: the summary words that are not empty.
_HEAD, _TAIL, _COUNT, _SESSIONS, _BITS, _SUMMARY, _GROUPS, _QUEUE, _TOP = range(9)
_HEADER = 9  # each session's live queue position follows the header
_SHIFT = 5  # 32 bits to a word
_MASK = 31
WORD = 32
MAX_SESSIONS = 32 * 32 * 32
"""The most sessions a set holds: three levels of 32-bit words, searched without loops
(a scenario has at most ``planner.limits.SESSIONS``, 1,024)."""
# The lowest set bit of a 32-bit word by a de Bruijn sequence: isolate it, multiply, and
# look the top five bits up (exact integer arithmetic, compiled or not).
_DE_BRUIJN = 0x077CB531
_DE_BRUIJN_BIT = np.array(
    [0, 1, 28, 2, 29, 14, 24, 3, 30, 22, 20, 15, 25, 17, 4, 8,
     31, 27, 13, 23, 21, 19, 16, 7, 26, 12, 18, 6, 11, 5, 10, 9],
    np.int64,
)  # fmt: skip


class Pending(NamedTuple):
    """The frames pending for the GPU (see the module docstring): ``at[i]``, when session
    i's frame became pending (+inf: it has none), and ``slots``, the order and bits."""

    at: np.ndarray
    slots: np.ndarray


@jit()
def pending_set(sessions):  # type: ignore[no-untyped-def]
    """An empty set for ``sessions`` sessions (at most ``MAX_SESSIONS``)."""
    if sessions > MAX_SESSIONS:
        raise ValueError("a pending set holds at most 32,768 sessions")
    words = (sessions + _MASK) >> _SHIFT
    groups = (words + _MASK) >> _SHIFT
    bits = _HEADER + sessions
    queue = bits + words + groups
    slots = np.zeros(queue + 4 * sessions + 64, np.int64)
    slots[_HEAD] = queue
    slots[_TAIL] = queue
    slots[_SESSIONS] = sessions
    slots[_BITS] = bits
    slots[_SUMMARY] = bits + words
    slots[_GROUPS] = groups
    slots[_QUEUE] = queue
    slots[_HEADER : _HEADER + sessions] = -1
    return Pending(np.full(sessions, math.inf), slots)


@jit()
def of_times(times):  # type: ignore[no-untyped-def]
    """The set of the frames in ``times`` (one time per session, +inf where none)."""
    frames = pending_set(times.size)
    order = np.argsort(times, kind="mergesort")  # stable: equal times by session
    for k in range(times.size):
        i = order[k]
        if not times[i] < math.inf:
            break
        add(frames.slots, frames.at, i, times[i])
    return frames


@jit(inline="always")
def lowest_bit(word):  # type: ignore[no-untyped-def]
    """The position of the lowest set bit of a non-zero word."""
    return _DE_BRUIJN_BIT[(((word & -word) * _DE_BRUIJN) & 0xFFFFFFFF) >> 27]


@jit(inline="always")
def add(slots, at, session, t):  # type: ignore[no-untyped-def]
    """Session ``session``'s frame became pending at ``t``, replacing any it had. Frames
    must be added in (time, session) order."""
    if slots[_HEADER + session] < 0:
        slots[_COUNT] += 1
        word = session >> _SHIFT
        group = word >> _SHIFT
        slots[slots[_BITS] + word] |= 1 << (session & _MASK)
        slots[slots[_SUMMARY] + group] |= 1 << (word & _MASK)
        slots[_TOP] |= 1 << group
    tail = slots[_TAIL]
    if tail == slots.size:
        tail = _compact(slots)
    slots[tail] = session
    slots[_HEADER + session] = tail
    slots[_TAIL] = tail + 1
    at[session] = t


@jit(inline="always")
def _compact(slots):  # type: ignore[no-untyped-def]
    """Move the queue's live entries to the start of its space, in order; return the new
    tail. At most one entry per session is live, so at least three quarters of the space
    come free."""
    to = slots[_QUEUE]
    for position in range(slots[_HEAD], slots[_TAIL]):
        i = slots[position]
        if slots[_HEADER + i] == position:
            slots[to] = i
            slots[_HEADER + i] = to
            to += 1
    slots[_HEAD] = slots[_QUEUE]
    slots[_TAIL] = to
    return to


@jit(inline="always")
def remove(slots, at, session):  # type: ignore[no-untyped-def]
    """Session ``session``'s frame leaves the set (it must have one)."""
    slots[_HEADER + session] = -1
    slots[_COUNT] -= 1
    at[session] = math.inf
    word = session >> _SHIFT
    place = slots[_BITS] + word
    left = slots[place] & ~(1 << (session & _MASK))
    slots[place] = left
    if left == 0:
        group = word >> _SHIFT
        place = slots[_SUMMARY] + group
        left = slots[place] & ~(1 << (word & _MASK))
        slots[place] = left
        if left == 0:
            slots[_TOP] &= ~(1 << group)


@jit(inline="always")
def size(slots):  # type: ignore[no-untyped-def]
    """How many sessions have a pending frame."""
    return slots[_COUNT]


@jit(inline="always")
def live_from(slots, position):  # type: ignore[no-untyped-def]
    """The first live queue position at or after ``position`` (the tail when none)."""
    tail = slots[_TAIL]
    while position < tail and slots[_HEADER + slots[position]] != position:
        position += 1
    return position


@jit(inline="always")
def oldest(slots):  # type: ignore[no-untyped-def]
    """The queue position of the oldest pending frame (the tail when none); moves the head
    past the dead entries before it."""
    position = live_from(slots, slots[_HEAD])
    slots[_HEAD] = position
    return position


@jit(inline="always")
def at_end(slots, position):  # type: ignore[no-untyped-def]
    """Whether ``position`` is past the last entry."""
    return position >= slots[_TAIL]


@jit(inline="always")
def session_at(slots, position):  # type: ignore[no-untyped-def]
    """The session of the entry at queue position ``position``."""
    return slots[position]


@jit(inline="always")
def take_oldest(slots, position, limit, chosen):  # type: ignore[no-untyped-def]
    """Put the sessions of up to ``limit`` frames, oldest first, from queue position
    ``position`` on, into ``chosen``, and return how many."""
    tail = slots[_TAIL]
    count = 0
    while count < limit and position < tail:
        i = slots[position]
        if slots[_HEADER + i] == position:
            chosen[count] = i
            count += 1
        position += 1
    return count


@jit(inline="always")
def next_from(slots, start):  # type: ignore[no-untyped-def]
    """The lowest session at or after ``start`` with a pending frame, or -1."""
    # (No loop and one way out, so that the kernels keep no reference counting: see
    # ``policies._answer``.)
    found = -1
    if start < slots[_SESSIONS]:
        bits, summary = slots[_BITS], slots[_SUMMARY]
        word = start >> _SHIFT
        rest = slots[bits + word] >> (start & _MASK)
        if rest != 0:
            found = start + lowest_bit(rest)
        else:
            # The next non-empty word after this one: in this word's group, else in the
            # next non-empty group.
            word += 1
            group = word >> _SHIFT
            rest = 0
            if group < slots[_GROUPS]:
                rest = (slots[summary + group] >> (word & _MASK)) << (word & _MASK)
            if rest == 0 and group + 1 < WORD:
                later = (slots[_TOP] >> (group + 1)) << (group + 1)
                if later != 0:
                    group = lowest_bit(later)
                    rest = slots[summary + group]
            if rest != 0:
                word = (group << _SHIFT) + lowest_bit(rest)
                found = (word << _SHIFT) + lowest_bit(slots[bits + word])
    return found


@jit(inline="always")
def in_session_order(slots, chosen):  # type: ignore[no-untyped-def]
    """Put every session with a pending frame, lowest first, into ``chosen``; return how
    many."""
    bits, summary = slots[_BITS], slots[_SUMMARY]
    count = 0
    groups = slots[_TOP]
    while groups != 0:
        group = lowest_bit(groups)
        groups &= groups - 1
        words = slots[summary + group]
        while words != 0:
            word = (group << _SHIFT) + lowest_bit(words)
            words &= words - 1
            rest = slots[bits + word]
            while rest != 0:
                chosen[count] = (word << _SHIFT) + lowest_bit(rest)
                count += 1
                rest &= rest - 1
    return count
