"""Demand over time: concurrent sessions per step of a day or a week (SPEC §5.3).

A **demand profile** is a regular series of concurrent-session counts: 24 hourly values
for a day, 168 for a week, or an uploaded CSV (``time, sessions``) with any regular step.
A profile that covers exactly one day or one week *repeats*: the step after its last is
its first again. Any other profile does not: it ends at its last step. The built-in
profiles are *shapes* (fractions of a peak that the user gives), not anyone's measured
traffic. The fleet a profile needs is ``planner.demand.fleet``.
"""

from __future__ import annotations

import csv
import io
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from planner import limits
from planner.curves.imports.base import Problems, decode_text
from planner.errors import BadInput
from planner.units import is_finite

ProfileSource = Literal["built-in", "typed", "uploaded"]

DAY_MINUTES = 1440.0
WEEK_MINUTES = 7 * DAY_MINUTES
DAYS_PER_MONTH = 30
"""A month, for cost per month, is 30 days (SPEC §5.3)."""
HOURS_PER_MONTH = DAYS_PER_MONTH * 24
"""A seat running around the clock for a month: 720 hours, the month of ``DAYS_PER_MONTH``."""
LEAD_TIME_MIN = 15.0
"""Default autoscaling lead time: minutes from asking for a GPU to it serving (a node
starting, the image pulled, the model loaded). An assumption to replace with your own."""

PROFILE_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")
"""A profile's name (lower case): it travels in links and on the command line."""
_CLOCK = re.compile(r"^([0-9]{1,2}):([0-9]{2})(?::([0-9]{2}(?:\.[0-9]+)?))?$")
_DATE = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}")
_SEPARATORS = re.compile(r"[\s,;]+")

# Built-in shapes: hourly fractions of the peak, from 00:00. They describe shapes of a
# day for planning, not any service's measured traffic.
SHAPES: dict[str, tuple[str, tuple[float, ...]]] = {
    "flat": ("the peak all day", (1.0,) * 24),
    "office-hours": (
        "a working day: low at night, rising from 07:00, the peak from 09:00 to 16:00, "
        "falling after 17:00",
        (
            0.05, 0.05, 0.05, 0.05, 0.05, 0.05, 0.1, 0.3, 0.7, 1.0, 1.0, 1.0,
            0.9, 1.0, 1.0, 1.0, 0.9, 0.6, 0.3, 0.15, 0.1, 0.1, 0.05, 0.05,
        ),
    ),
    "evening-peak": (
        "a consumer evening: low in the small hours, a slow rise through the day, the "
        "peak from 19:00 to 22:00",
        (
            0.2, 0.1, 0.05, 0.05, 0.05, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.3,
            0.35, 0.35, 0.35, 0.4, 0.5, 0.6, 0.8, 0.95, 1.0, 0.9, 0.6, 0.35,
        ),
    ),
}  # fmt: skip
"""Built-in shapes by name: (what the shape is, 24 hourly fractions of the peak)."""


def clean_profile_name(value: object) -> str:
    """A profile's name: lower case, 1-64 letters, digits, ``.``, ``_`` or ``-``, starting
    with a letter or digit (it travels in links and on the command line)."""
    text = value.strip().lower() if isinstance(value, str) else ""
    if not PROFILE_NAME.match(text):
        raise BadInput(
            f"a profile name must be 1 to 64 letters, digits, '.', '_' or '-', starting with "
            f"a letter or digit (not {str(value)[:40]!r})"
        )
    return text


@dataclass(frozen=True)
class DemandProfile:
    """Concurrent sessions per step, from the profile's start.

    ``sessions[t]`` is the demand during step t, which lasts ``step_minutes``. ``start``
    names the first step's time as given (``"00:00"`` for typed and built-in profiles),
    for labels only. ``description`` says what the profile is (a built-in shape says it
    is a shape).
    """

    name: str
    sessions: tuple[float, ...]
    step_minutes: float = 60.0
    source: ProfileSource = "typed"
    start: str | None = "00:00"
    description: str = ""

    def __post_init__(self) -> None:
        problems = []
        try:
            object.__setattr__(self, "name", clean_profile_name(self.name))
        except BadInput as exc:
            problems.extend(exc.problems)
        values = tuple(self.sessions)
        if not limits.PROFILE_STEPS.holds(len(values)):
            problems.append(
                f"a profile has {limits.PROFILE_STEPS.words()} steps, not {len(values)}"
            )
        bad = [i for i, v in enumerate(values) if not limits.DEMAND_SESSIONS.holds(v)]
        if bad:
            problems.append(
                f"sessions must be {limits.DEMAND_SESSIONS.words()} in every step "
                f"(step {bad[0] + 1} holds {values[bad[0]]!r})"
            )
        if not limits.STEP_MINUTES.holds(self.step_minutes):
            problems.append(f"the step must be {limits.STEP_MINUTES.words()} minutes")
        if problems:
            raise BadInput(problems)
        object.__setattr__(self, "sessions", tuple(float(v) for v in values))
        object.__setattr__(self, "step_minutes", float(self.step_minutes))

    @property
    def steps(self) -> int:
        return len(self.sessions)

    @property
    def span_minutes(self) -> float:
        return self.steps * self.step_minutes

    @property
    def repeats(self) -> bool:
        """Whether the profile covers exactly one day or one week, and so wraps around."""
        span = self.span_minutes
        return any(math.isclose(span, whole, rel_tol=1e-9) for whole in (DAY_MINUTES, WEEK_MINUTES))

    @property
    def peak(self) -> float:
        return max(self.sessions)

    @property
    def hours(self) -> tuple[float, ...]:
        """Each step's start, in hours from the profile's start."""
        return tuple(t * self.step_minutes / 60.0 for t in range(self.steps))

    @property
    def shape(self) -> str:
        """The profile in words: ``24 steps of 60 min (a day, repeating)``."""
        span = self.span_minutes
        if math.isclose(span, DAY_MINUTES):
            cover = "a day, repeating"
        elif math.isclose(span, WEEK_MINUTES):
            cover = "a week, repeating"
        else:
            cover = f"{span / 60:g} hours, not repeating"
        return f"{self.steps} steps of {self.step_minutes:g} min ({cover})"

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "source": self.source,
            "step_minutes": self.step_minutes,
            "start": self.start,
            "repeats": self.repeats,
            "peak_sessions": self.peak,
            "description": self.description,
            "sessions": list(self.sessions),
        }


# ---------------------------------------------------------------------------------------
# Where profiles come from: a built-in shape, typed values, a CSV file.


def builtin_profile(name: str, peak_sessions: float | None) -> DemandProfile:
    """The built-in shape ``name`` scaled to ``peak_sessions`` (BadInput without a peak:
    a shape is a fraction of the peak, not a number of sessions)."""
    key = name.strip().lower()
    if key not in SHAPES:
        raise BadInput(f"no built-in profile {name!r}; the built-in shapes are {', '.join(SHAPES)}")
    if peak_sessions is None:
        raise BadInput(
            f"the {key} profile is a shape, a fraction of the peak; give the peak sessions "
            "to scale it"
        )
    if not limits.DEMAND_SESSIONS.holds(peak_sessions):
        raise BadInput(f"the peak must be {limits.DEMAND_SESSIONS.words()} sessions")
    words, fractions = SHAPES[key]
    return DemandProfile(
        name=key,
        sessions=tuple(f * peak_sessions for f in fractions),
        step_minutes=60.0,
        source="built-in",
        description=f"Built-in shape ({words}) scaled to a peak of {peak_sessions:g} "
        "sessions; a shape to plan with, not measured traffic.",
    )


def typed_profile(name: str, values: str | Sequence[float]) -> DemandProfile:
    """A profile of 24 hourly values (a day) or 168 (a week, from Monday 00:00), given as a
    list or as text separated by commas, spaces or new lines."""
    if isinstance(values, str):
        items = [v for v in _SEPARATORS.split(values.strip()) if v]
        numbers: list[float] = []
        problems = []
        for position, item in enumerate(items, start=1):
            try:
                number = float(item) if len(item) <= 40 else math.nan
            except ValueError:
                number = math.nan
            if not limits.DEMAND_SESSIONS.holds(number):
                problems.append(
                    f"value {position} ({item[:40]!r}) is not a number of sessions "
                    f"{limits.DEMAND_SESSIONS.words()}"
                )
            numbers.append(number)
        if problems:
            raise BadInput(
                problems[:10] + ([f"… and {len(problems) - 10} more"] if len(problems) > 10 else [])
            )
    else:
        numbers = [float(v) if is_finite(v) else math.nan for v in values]
    if len(numbers) not in (24, 168):
        raise BadInput(
            f"give 24 hourly values for a day or 168 for a week (from Monday 00:00), "
            f"not {len(numbers)}"
        )
    what = "a day" if len(numbers) == 24 else "a week from Monday 00:00"
    return DemandProfile(
        name=name,
        sessions=tuple(numbers),
        step_minutes=60.0,
        source="typed",
        description=f"Hourly concurrent sessions over {what}, typed in.",
    )


def read_profile_csv(name: str, file_name: str, data: bytes) -> DemandProfile:
    """A profile from a CSV file with the columns ``time`` and ``sessions`` (any order;
    other columns are ignored), one row per step, at a regular step.

    ``time`` is, in every row alike, a time of day (``08:00``, ``08:00:30``; a time
    earlier than the row before is on the next day), a date and time
    (``2026-11-30T08:00``), or a number of hours from the start. ``sessions`` is the
    concurrent sessions in the step that starts then. BadInput lists every problem with
    its line (the first 50, then counts by kind); nothing is returned from a bad file.
    """
    text = decode_text(file_name, data)
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        return _profile_from_rows(name, file_name, reader)
    except csv.Error as exc:  # an open quote, a field over the reader's 128 KiB, …
        raise BadInput(
            f"{file_name} line {reader.line_num}: not a readable CSV table ({exc})"
        ) from None


def _profile_from_rows(name: str, file_name: str, reader: Any) -> DemandProfile:
    problems = Problems(file_name)
    header: list[str] | None = None
    header_line = 0
    for row in reader:
        if any(cell.strip() for cell in row):
            header = [cell.strip().lower() for cell in row]
            header_line = reader.line_num
            break
    if header is None:  # pragma: no cover - decode_text refuses an empty file
        raise BadInput(f"{file_name}: file is empty")
    missing = [c for c in ("time", "sessions") if c not in header]
    if missing:
        raise BadInput(
            f"{file_name} line {header_line}: the header needs the columns time and sessions "
            f"(missing {', '.join(missing)}; found {', '.join(repr(h[:20]) for h in header[:8])})"
        )
    at_time, at_sessions = header.index("time"), header.index("sessions")
    rows: list[tuple[int, str, float]] = []
    too_many = False
    for row in reader:
        if not any(cell.strip() for cell in row):
            continue
        line = reader.line_num
        if len(rows) >= limits.PROFILE_STEPS.high:
            too_many = True
            break
        where = f"{file_name} line {line}"
        if len(row) <= max(at_time, at_sessions):
            problems.append(f"{where}: has {len(row)} cells; the header has {len(header)}")
            continue
        stamp, count = row[at_time].strip(), row[at_sessions].strip()
        try:
            sessions = float(count) if len(count) <= 40 else math.nan
        except ValueError:
            sessions = math.nan
        if not limits.DEMAND_SESSIONS.holds(sessions):
            problems.append(
                f"{where}: sessions {count[:40]!r} is not a number {limits.DEMAND_SESSIONS.words()}"
            )
        rows.append((line, stamp, sessions))
    if too_many:
        problems.append(
            f"{file_name}: more than {limits.PROFILE_STEPS.high:,.0f} rows; a profile has at "
            "most that many steps (use a longer step)"
        )
    minutes = _minutes(file_name, rows, problems)
    if len(rows) < 2 and not problems:
        problems.append(f"{file_name}: needs at least two rows, to know the step")
    step = 0.0
    if minutes is not None and len(minutes) >= 2:
        step = minutes[1] - minutes[0]
        if step <= 0:
            problems.append(
                f"{file_name} line {rows[1][0]}: time {rows[1][1][:40]!r} is not after the "
                "row before"
            )
        else:
            for (line, stamp, _), before, now in zip(rows[1:], minutes, minutes[1:], strict=False):
                gap = now - before
                if not math.isclose(gap, step, rel_tol=1e-9, abs_tol=1e-6):
                    problems.append(
                        f"{file_name} line {line}: time {stamp[:40]!r} is {gap:g} min after "
                        f"the row before; the step is {step:g} min (every step must be the same)"
                    )
            if not limits.STEP_MINUTES.holds(step):
                problems.append(
                    f"{file_name}: the step must be {limits.STEP_MINUTES.words()} minutes"
                )
    problems.check()
    return DemandProfile(
        name=name,
        sessions=tuple(s for _, _, s in rows),
        step_minutes=step,
        source="uploaded",
        start=rows[0][1][:40],
        description=f"Uploaded from {file_name[:80]}.",
    )


def _minutes(
    file_name: str, rows: list[tuple[int, str, float]], problems: Problems
) -> list[float] | None:
    """Each row's time in minutes from the first row, read the way the first row reads
    (time of day, date and time, or hours); None when a time does not read."""
    if not rows:
        return None
    first = rows[0][1]
    if _CLOCK.match(first):
        kind, reader = "a time of day like 08:00", _clock
    elif _DATE.match(first):
        kind, reader = "a date and time like 2026-11-30T08:00", _datetime
    else:
        kind, reader = "a number of hours from the start", _hours
    values: list[float] = []
    failed = False
    for line, stamp, _ in rows:
        value = reader(stamp)
        if value is None:
            problems.append(
                f"{file_name} line {line}: time {stamp[:40]!r} is not {kind} (as in the first row)"
            )
            failed = True
        values.append(value if value is not None else math.nan)
    if failed:
        return None
    if reader is _clock:
        # A time of day earlier than the row before is on the next day.
        days, out = 0.0, []
        for before, now in zip([values[0], *values], values, strict=False):
            if now < before:
                days += DAY_MINUTES
            out.append(now + days)
        values = out
    return [v - values[0] for v in values]


def _clock(text: str) -> float | None:
    match = _CLOCK.match(text)
    if not match:
        return None
    hours, minutes = int(match[1]), int(match[2])
    seconds = float(match[3]) if match[3] else 0.0
    if hours > 23 or minutes > 59 or seconds >= 60:
        return None
    return hours * 60 + minutes + seconds / 60


def _datetime(text: str) -> float | None:
    try:
        stamp = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    # Minutes since the epoch (naive times read as UTC; the differences are what count).
    try:
        if stamp.tzinfo is None:
            return (stamp - datetime(1970, 1, 1)).total_seconds() / 60
        return stamp.timestamp() / 60
    except (OverflowError, OSError):  # pragma: no cover - year 1 or 9999 edge cases
        return None


def _hours(text: str) -> float | None:
    try:
        value = float(text) if len(text) <= 40 else math.nan
    except ValueError:
        return None
    return value * 60 if math.isfinite(value) else None
