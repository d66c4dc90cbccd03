"""Demand profiles and the fleet over a day (SPEC §5.3), against hand-worked profiles.

Every expected figure below is worked out by hand in the comment next to it, from the
rules in ``planner.demand.profiles``'s docstring: GPUs per step ``ceil(D (1 + h) / S)``; an
autoscaled step runs the largest of itself and the next ``ceil(T / step)`` steps.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from planner.demand.fleet import demand_fleet, gpus_for, steps_ahead
from planner.demand.profiles import (
    SHAPES,
    DemandProfile,
    builtin_profile,
    read_profile_csv,
    typed_profile,
)
from planner.errors import BadInput
from planner.store.repository import Store


def day(**hours: float) -> DemandProfile:
    """A daily hourly profile, zero except the hours given as h8=40 etc."""
    values = [0.0] * 24
    for key, value in hours.items():
        values[int(key[1:])] = value
    return DemandProfile("test-day", tuple(values))


# ---------------------------------------------------------------------------------------
# The fleet arithmetic.


def test_a_lead_time_that_is_not_a_multiple_of_the_step() -> None:
    # Demand 40, 80, 20 sessions at 08:00, 09:00, 10:00; 10 seats per card, no headroom:
    # needed 4, 8, 2 GPUs. A 90-min lead time spans ceil(90/60) = 2 later steps, so
    # 06:00 runs max(h6, h7, h8) = 4; 07:00 max(h7, h8, h9) = 8; 08:00 and 09:00 8;
    # 10:00 max(h10, h11, h12) = 2; every other hour 0.
    profile = day(h8=40, h9=80, h10=20)
    fleet = demand_fleet(
        profile, seats_per_card=10, headroom=0.0, lead_time_min=90, price_per_hour=2.0
    )
    assert fleet.steps_ahead == 2
    assert fleet.needed[8:11] == (4, 8, 2)
    expected = [0] * 24
    expected[6:11] = [4, 8, 8, 8, 2]
    assert list(fleet.autoscaled.gpus) == expected
    # 30 GPU-hours a day at $2: $60 a day, $1,800 a month (30 days).
    assert fleet.autoscaled.gpu_hours_per_day == pytest.approx(30.0)
    assert fleet.autoscaled.cost_per_day == pytest.approx(60.0)
    assert fleet.autoscaled.cost_per_month == pytest.approx(1800.0)
    # The fixed fleet runs the peak's 8 GPUs all day: 192 GPU-hours, $384 a day.
    assert fleet.fixed.gpus == (8,) * 24 and fleet.fixed.peak_gpus == 8
    assert fleet.fixed.cost_per_day == pytest.approx(384.0)
    assert fleet.autoscaled.peak_gpus == 8
    # Utilisation over the steps that provision seats: 06:00 0/40, 07:00 0/80,
    # 08:00 40/80, 09:00 80/80, 10:00 20/20 -> (0 + 0 + 0.5 + 1 + 1) / 5 = 0.5.
    assert fleet.autoscaled.mean_utilisation == pytest.approx(0.5)
    # Fixed: 80 seats every hour; (40 + 80 + 20) / 80 over 24 hours = 1.75 / 24.
    assert fleet.fixed.mean_utilisation == pytest.approx(1.75 / 24)


def test_the_lead_time_rounds_up_to_whole_steps() -> None:
    profile = day(h8=40, h9=80, h10=20)

    def gpus(lead: float) -> tuple[int, ...]:
        fleet = demand_fleet(profile, seats_per_card=10, headroom=0.0, lead_time_min=lead)
        return fleet.autoscaled.gpus

    assert gpus(61) == gpus(90) == gpus(120)  # all two steps ahead
    assert gpus(60) != gpus(61)  # one step ahead: 07:00 runs max(h7, h8) = 4
    assert gpus(60)[7] == 4 and gpus(61)[7] == 8
    assert gpus(0)[8:11] == (4, 8, 2) and sum(gpus(0)) == 14  # no lead: exactly the need
    assert [steps_ahead(t, 60) for t in (0, 1, 59.999, 60, 60.5, 120)] == [0, 1, 1, 1, 2, 2]


def test_the_lead_time_across_the_days_wrap_around() -> None:
    # 50 sessions at 00:00 and 10 at 01:00; 10 seats per card, 20% headroom:
    # ceil(60 / 10) = 6 and ceil(12 / 10) = 2 GPUs. The day repeats, so with a 45-min lead
    # time (1 step ahead) 23:00 runs max(h23, next day's h0) = 6; with 150 min (3 steps)
    # 21:00, 22:00 and 23:00 all do.
    profile = day(h0=50, h1=10)
    assert profile.repeats
    short = demand_fleet(profile, seats_per_card=10, headroom=0.2, lead_time_min=45)
    assert short.needed[:2] == (6, 2)
    assert short.autoscaled.gpus[23] == 6 and short.autoscaled.gpus[22] == 0
    assert short.autoscaled.gpus[:3] == (6, 2, 0)
    long = demand_fleet(profile, seats_per_card=10, headroom=0.2, lead_time_min=150)
    assert long.autoscaled.gpus[20:] == (0, 6, 6, 6)
    # A lead time longer than the whole day sees every step: the peak all day.
    whole = demand_fleet(profile, seats_per_card=10, headroom=0.2, lead_time_min=3000)
    assert whole.autoscaled.gpus == whole.fixed.gpus == (6,) * 24


def test_a_weekly_profile_wraps_from_sunday_night_to_monday() -> None:
    values = [0.0] * 168
    values[0] = 100  # Monday 00:00
    profile = typed_profile("week", values)
    assert profile.repeats and profile.steps == 168
    fleet = demand_fleet(profile, seats_per_card=25, headroom=0.0, lead_time_min=120)
    assert fleet.autoscaled.gpus[166:] == (4, 4) and fleet.autoscaled.gpus[0] == 4
    # 3 steps of 4 GPUs over the week = 12 GPU-hours, so 12 / 7 a day.
    assert fleet.autoscaled.gpu_hours == pytest.approx(12.0)
    assert fleet.autoscaled.gpu_hours_per_day == pytest.approx(12.0 / 7)


UPLOADED = b"time,sessions\n08:00,60\n09:00,20\n10:00,10\n11:00,30\n"


def test_an_uploaded_profile_that_does_not_repeat_ends_at_its_last_step() -> None:
    # Four hours, 08:00 to 11:00 (not a whole day: no wrap-around). 10 seats per card, no
    # headroom: needed 6, 2, 1, 3. Two steps ahead (120 min): 08:00 max(6, 2, 1) = 6;
    # 09:00 max(2, 1, 3) = 3; 10:00 max(1, 3) = 3; 11:00 is the last step: 3, not the 6 of
    # 08:00 (which a repeating profile would bring round again).
    profile = read_profile_csv("morning", "morning.csv", UPLOADED)
    assert profile.steps == 4 and profile.step_minutes == 60 and not profile.repeats
    assert profile.start == "08:00" and profile.source == "uploaded"
    fleet = demand_fleet(
        profile, seats_per_card=10, headroom=0.0, lead_time_min=120, price_per_hour=1.0
    )
    assert fleet.needed == (6, 2, 1, 3)
    assert fleet.autoscaled.gpus == (6, 3, 3, 3)
    # 15 GPU-hours over its 4 hours; scaled to a day: 15 x 24 / 4 = 90.
    assert fleet.autoscaled.gpu_hours == pytest.approx(15.0)
    assert fleet.autoscaled.gpu_hours_per_day == pytest.approx(90.0)
    assert fleet.autoscaled.cost_per_day == pytest.approx(90.0)
    assert fleet.fixed.gpu_hours_per_day == pytest.approx(6 * 24)
    assert any("does not repeat: it ends at its last step" in n for n in fleet.notes)
    assert not any("repeats: after its last" in n for n in fleet.notes)
    # The same four values as a repeating profile would differ at the end: a day of
    # 6-hour steps wraps 11:00-style last step round to the first.
    wrapping = DemandProfile("wrap", profile.sessions, step_minutes=360.0)
    assert wrapping.repeats
    wrapped = demand_fleet(wrapping, seats_per_card=10, headroom=0.0, lead_time_min=720)
    assert wrapped.autoscaled.gpus[-1] == 6


def test_cost_charges_our_part_of_a_shared_card_and_is_none_without_a_price() -> None:
    profile = day(h8=40)
    shared = demand_fleet(
        profile,
        seats_per_card=10,
        headroom=0.0,
        lead_time_min=0,
        price_per_hour=4.0,
        card_share=0.25,
    )
    # 4 GPUs for one hour at $4, charged a quarter of the card: $4 a day.
    assert shared.autoscaled.cost_per_day == pytest.approx(4.0)
    assert any("our 25% of the card" in n for n in shared.notes)
    unpriced = demand_fleet(profile, seats_per_card=10, headroom=0.0)
    assert unpriced.fixed.cost_per_day is None and unpriced.fixed.cost_per_month is None
    # No demand at all: no GPUs, and no utilisation to average.
    empty = demand_fleet(day(), seats_per_card=10, headroom=0.2)
    assert empty.fixed.peak_gpus == 0 and empty.autoscaled.mean_utilisation is None


@given(
    st.integers(min_value=1, max_value=10_000),
    st.floats(min_value=0, max_value=10),
    st.integers(min_value=1, max_value=512),
)
def test_gpus_per_step_are_the_fewest_cards_whose_seats_hold_the_demand_with_headroom(
    sessions: int, headroom: float, seats: int
) -> None:
    # The one rule for the peak and for every step of a profile: ceil(D (1 + h) / S).
    gpus = gpus_for(sessions, headroom, seats)
    needed = sessions * (1.0 + headroom)
    assert gpus * seats >= needed - 1e-6
    assert (gpus - 1) * seats < needed


def test_a_fleet_refuses_bad_numbers() -> None:
    with pytest.raises(BadInput) as caught:
        demand_fleet(day(h1=1), seats_per_card=0, headroom=-1, lead_time_min=-5)
    assert len(caught.value.problems) == 3


# ---------------------------------------------------------------------------------------
# Where profiles come from.


def test_builtin_shapes_are_fractions_of_the_peak_and_say_they_are_shapes() -> None:
    assert set(SHAPES) == {"flat", "office-hours", "evening-peak"}
    office = builtin_profile("Office-Hours", 200)
    assert office.peak == 200 and office.repeats and office.source == "built-in"
    assert office.sessions[3] == pytest.approx(10.0)  # 0.05 of the peak at 03:00
    assert "not measured traffic" in office.description
    assert builtin_profile("flat", 7).sessions == (7.0,) * 24
    evening = builtin_profile("evening-peak", 100)
    assert max(range(24), key=lambda h: evening.sessions[h]) == 20
    with pytest.raises(BadInput, match="give the peak sessions"):
        builtin_profile("flat", None)
    with pytest.raises(BadInput, match="no built-in profile"):
        builtin_profile("lunchtime", 10)


def test_typed_values_make_a_day_or_a_week() -> None:
    text = ", ".join(str(h) for h in range(24))
    profile = typed_profile("Typed-Day", text)
    assert profile.name == "typed-day" and profile.sessions[23] == 23 and profile.repeats
    assert typed_profile("w", "1\n" * 168).steps == 168
    with pytest.raises(BadInput, match="24 hourly values for a day or 168"):
        typed_profile("x", "1 2 3")
    with pytest.raises(BadInput) as caught:
        typed_profile("x", "1 two 3 -4" + " 0" * 20)
    assert caught.value.problems == [
        "value 2 ('two') is not a number of sessions from 0 to 10000000",
        "value 4 ('-4') is not a number of sessions from 0 to 10000000",
    ]
    with pytest.raises(BadInput, match="a profile name must be"):
        typed_profile("bad name!", [1.0] * 24)


@pytest.mark.parametrize(
    ("text", "step", "start"),
    [
        ("time,sessions\n2026-11-30T08:00,5\n2026-11-30T08:15,6\n2026-11-30 08:30,7\n", 15, None),
        ("time,sessions\n0,5\n0.5,6\n1,7\n", 30, "0"),
        # Past midnight: 23:30 then 00:00 is the next day.
        ("Sessions , Time,notes\n5,23:00,x\n6,23:30,\n7,00:00,y\n", 30, "23:00"),
    ],
)
def test_a_csv_profile_reads_clock_times_dates_and_hours(
    text: str, step: float, start: str | None
) -> None:
    profile = read_profile_csv("p", "p.csv", text.encode())
    assert profile.sessions == (5.0, 6.0, 7.0)
    assert profile.step_minutes == pytest.approx(step)
    if start is not None:
        assert profile.start == start


def test_a_day_of_csv_rows_repeats() -> None:
    rows = "".join(f"{h:02d}:00,{h}\n" for h in range(24))
    assert read_profile_csv("d", "d.csv", f"time,sessions\n{rows}".encode()).repeats


@pytest.mark.parametrize(
    ("text", "problems"),
    [
        ("when,sessions\n08:00,1\n", ["p.csv line 1: the header needs the columns time and"]),
        (
            "time,sessions\n08:00,1\n09:00,2\n09:30,3\n11:00,-4\n",
            [
                "p.csv line 5: sessions '-4' is not a number from 0 to 10000000",
                "p.csv line 4: time '09:30' is 30 min after the row before; the step is 60",
                "p.csv line 5: time '11:00' is 90 min after the row before; the step is 60",
            ],
        ),
        ("time,sessions\n08:00,1\n", ["p.csv: needs at least two rows"]),
        ("time,sessions\n08:00,1\n08:00,2\n", ["p.csv line 3: time '08:00' is not after"]),
        (
            "time,sessions\n08:00,1\n2026-11-30T09:00,2\n9,x\n",
            [
                "p.csv line 4: sessions 'x' is not a number",
                "p.csv line 3: time '2026-11-30T09:00' is not a time of day like 08:00",
                "p.csv line 4: time '9' is not a time of day like 08:00",
            ],
        ),
        (
            "time,sessions\n25:00,1\n26:00,2\n",
            [
                "p.csv line 2: time '25:00' is not a time of day like 08:00",
                "p.csv line 3: time '26:00' is not a time of day like 08:00",
            ],
        ),
        ("time,sessions\n1,1\n2\n", ["p.csv line 3: has 1 cells; the header has 2"]),
    ],
)
def test_a_bad_csv_profile_reports_every_problem_with_its_line(
    text: str, problems: list[str]
) -> None:
    with pytest.raises(BadInput) as caught:
        read_profile_csv("p", "p.csv", text.encode())
    reported = caught.value.problems
    assert len(reported) == len(problems), reported
    for want, got in zip(problems, reported, strict=True):
        assert got.startswith(want), (want, got)


def test_a_csv_profile_with_many_bad_rows_gives_a_short_report() -> None:
    rows = "".join(f"{h},x\n" for h in range(500))
    with pytest.raises(BadInput) as caught:
        read_profile_csv("p", "p.csv", f"time,sessions\n{rows}".encode())
    lines = caught.value.problems
    assert len(lines) == 51 and "… and 450 more of the same kinds" in lines[-1]


def test_a_csv_profile_refuses_files_that_are_not_text_or_too_large() -> None:
    with pytest.raises(BadInput, match="not UTF-8 text"):
        read_profile_csv("p", "p.csv", b"time,sessions\n\xff\xfe,1\n")
    with pytest.raises(BadInput, match="limit for imports"):
        read_profile_csv("p", "p.csv", b"x" * (5 * 1024 * 1024 + 1))
    with pytest.raises(BadInput, match="more than 20,160 rows"):
        rows = "".join(f"{i},1\n" for i in range(20_161))
        read_profile_csv("p", "p.csv", f"time,sessions\n{rows}".encode())


# A field longer than the CSV reader's own limit (128 KiB), in the header and in a row.
FIELD = "x" * (200 * 1024)
WIDE_FIELDS = [
    f"time,sessions\n08:00,1\n09:00,{FIELD}\n".encode(),
    f"time,sessions,{FIELD}\n08:00,1,\n09:00,2,\n".encode(),
    f'time,sessions\n08:00,1\n09:00,"{FIELD}\n'.encode(),  # and the quote never closes
]


@pytest.mark.parametrize("data", WIDE_FIELDS, ids=["row", "header", "open-quote"])
def test_a_csv_profile_with_a_200_kib_field_is_one_line(data: bytes) -> None:
    with pytest.raises(BadInput) as caught:
        read_profile_csv("p", "p.csv", data)
    assert len(caught.value.problems) == 1
    assert len(caught.value.problems[0]) < 300, caught.value.problems[0][:300]


def test_the_profiles_command_refuses_a_200_kib_field_in_one_line(
    cli: Any, tmp_path: Path, db_path: Path
) -> None:
    path = tmp_path / "wide.csv"
    path.write_bytes(WIDE_FIELDS[0])
    run = cli("profiles", "add", "wide", "--file", str(path))
    assert run.status == 2 and "Traceback" not in run.err
    assert run.err.count("\n") == 1 and "p.csv" not in run.err and "wide.csv line 3" in run.err
    with Store(db_path) as store:
        assert store.profiles() == []


@pytest.mark.parametrize(
    "rows",
    [
        "0,5\n0.000000000001,6\n0.000000000002,7\n",  # hours: a step of 6e-11 minutes
        "08:00:00,5\n08:00:01,6\n08:00:02,7\n",  # a second
    ],
    ids=["6e-11-minutes", "one-second"],
)
def test_a_demand_step_below_the_minimum_is_refused(rows: str) -> None:
    with pytest.raises(BadInput) as caught:
        read_profile_csv("p", "p.csv", f"time,sessions\n{rows}".encode())
    assert caught.value.problems == ["p.csv: the step must be from 0.1 to 10080 minutes"]
    with pytest.raises(BadInput, match=r"the step must be from 0\.1 to 10080 minutes"):
        DemandProfile("p", (1.0, 2.0), step_minutes=6e-11)
    assert DemandProfile("p", (1.0, 2.0), step_minutes=0.1).step_minutes == 0.1
