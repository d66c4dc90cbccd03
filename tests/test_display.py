"""The one way numbers are written for people (``planner.display``)."""

from __future__ import annotations

import math

import pytest

from planner import display


@pytest.mark.parametrize(
    ("value", "text"),
    [(2.5, "$2.50"), (0.6, "$0.60"), (0.125, "$0.12"), (0.0421, "$0.042"), (0.0, "$0.00"),
     (1234.5, "$1,234.50"), (0.001234, "$0.0012"), (None, "-"), (math.nan, "-")],
)  # fmt: skip
def test_money_has_two_decimals_and_never_hides_a_small_cost(value, text) -> None:
    assert display.money(value) == text


@pytest.mark.parametrize(
    ("value", "text"),
    [(2417.3, "2,417 ms"), (100.0, "100 ms"), (38.46, "38.5 ms"), (9.823, "9.82 ms"),
     (0.4521, "0.452 ms"), (0.0, "0 ms"), (None, "-")],
)  # fmt: skip
def test_milliseconds_keep_about_three_significant_digits(value, text) -> None:
    assert display.ms(value) == text


def test_a_table_cell_leaves_the_unit_to_its_header() -> None:
    assert display.ms(38.46, unit=False) == "38.5"
    assert display.fps(11.94, unit=False) == "11.9"


@pytest.mark.parametrize(
    ("value", "text"),
    [(28.5, "28.5 fps"), (30.0, "30 fps"), (29.97, "30.0 fps"), (11.94, "11.9 fps"), (None, "-")],
)
def test_frame_rates_have_one_decimal(value, text) -> None:
    assert display.fps(value) == text


@pytest.mark.parametrize(
    ("value", "text"),
    [(0.125, "12.5%"), (0.5, "50%"), (1.0, "100%"), (0.04, "4.0%"), (0.004, "0.40%"),
     (0.00004, "0.004%"), (0.0, "0%"), (None, "-")],
)  # fmt: skip
def test_fractions_are_percentages_and_a_small_one_is_not_zero(value, text) -> None:
    assert display.fraction(value) == text


def test_a_range_of_one_measured_batch_is_not_written_as_a_range() -> None:
    assert display.batches([1]) == "batch 1"
    assert display.batches((1, 2, 4, 16)) == "batches 1–16"
