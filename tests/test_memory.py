"""GPU memory (SPEC §5.1): the memory model of a curve, the memory each sharing mode
leaves, and the largest batch that fits."""

from __future__ import annotations

import pytest

from planner.curves.curve import Point
from planner.sim.memory import (
    Available,
    MemoryModel,
    available,
    memory_limit,
    memory_model,
)
from planner.sim.scenario import Sharing

# memory(b) = 1500 + 500 b MB exactly
TWO = (Point(1, 4.69, memory_mb=2000.0), Point(4, 9.29, memory_mb=3500.0))
CARD_8GB = Available(8192.0, "on the card", "the card's 8.0 GB")


def test_two_points_give_the_line_through_them() -> None:
    model = memory_model(TWO)
    assert model is not None
    assert model.fixed_mb == pytest.approx(1500.0) and model.per_frame_mb == pytest.approx(500.0)
    assert model.at(10) == pytest.approx(6500.0)


def test_more_points_give_the_least_squares_line() -> None:
    points = [Point(1, 1.0, memory_mb=1000.0), Point(2, 2.0, memory_mb=1600.0),
              Point(4, 4.0, memory_mb=2200.0)]  # fmt: skip
    model = memory_model(points)
    assert model is not None
    # By hand: means 7/3 and 1600; Sxy = 1800, Sxx = 42/9; slope 2700/7, intercept 700.
    assert model.per_frame_mb == pytest.approx(2700.0 / 7.0)
    assert model.fixed_mb == pytest.approx(700.0)


def test_points_without_memory_give_no_model() -> None:
    assert memory_model([Point(1, 4.0), Point(2, 6.0)]) is None
    limit = memory_limit(None, CARD_8GB)
    assert limit.batch_limit is None and limit.fits_one
    assert "not checked" in limit.assumptions[0]


def test_the_largest_batch_that_fits_in_ninety_percent_of_the_memory() -> None:
    limit = memory_limit(memory_model(TWO), CARD_8GB)
    # 0.9 x 8192 = 7372.8 MB; 1500 + 500 b <= 7372.8 up to b = 11.
    assert limit.batch_limit == 11 and limit.fits_one
    assert limit.needs(12) == "batch 12 needs 7.3 GB of the 7.2 GB that fit on the card"
    assert memory_limit(memory_model(TWO), CARD_8GB, upto=11).batch_limit is None  # all fit


def test_when_batch_one_does_not_fit_nothing_does() -> None:
    small = Available(2048.0, "in a 1g.2gb instance", "the profile's 2.0 GB")
    limit = memory_limit(memory_model(TWO), small)
    assert limit.batch_limit == 0 and not limit.fits_one
    assert limit.needs(1) == "batch 1 needs 2.0 GB of the 1.8 GB that fit in a 1g.2gb instance"


def test_one_point_checks_only_up_to_its_batch_and_says_so() -> None:
    one = memory_model([Point(4, 9.0, memory_mb=3000.0)])
    assert one == MemoryModel(((4, 3000.0),), 3000.0, None)
    fits = memory_limit(one, CARD_8GB)
    assert fits.batch_limit is None
    assert "Batches above 4 are not checked" in fits.assumptions[1]
    tight = memory_limit(one, Available(3000.0, "on the card", "the card's 2.9 GB"))
    assert tight.batch_limit == 3 and tight.fits_one
    assert "smaller batches are assumed to fit" in tight.assumptions[1]
    at_one = memory_limit(memory_model([Point(1, 9.0, memory_mb=3000.0)]), tight.space)
    assert not at_one.fits_one


def test_the_memory_each_sharing_mode_leaves() -> None:
    assert available(Sharing(), 24.0).mb == 24 * 1024.0
    assert available(Sharing(), None).mb is None
    mig = Sharing.of("mig", mig_profile="1g.10gb", mig_slices=1, mig_total=7, mig_memory_gb=10.0)
    assert available(mig, 80.0).mb == 10 * 1024.0
    assert available(mig, None).where == "in a 1g.10gb instance"
    assert available(Sharing.of("mps", mps_share=50.0), 24.0).mb == 24 * 1024.0
    limited = Sharing.of("mps", mps_share=50.0, mps_memory_mb=6000.0)
    assert available(limited, 24.0).mb == 6000.0
    assert available(limited, 24.0).where == "under the MPS memory limit"
    each = Sharing.of("time-slicing", cotenants=(0.5, 0.5), cotenant_memory_mb=(4096.0,))
    assert available(each, 24.0).mb == (24 - 8) * 1024.0  # one figure for every co-tenant
    per = Sharing.of("time-slicing", cotenants=(0.5, 0.5), cotenant_memory_mb=(1024.0, 3072.0))
    space = available(per, 24.0)
    assert space.mb == 20 * 1024.0 and space.where == "beside the co-tenants"
    crowded = Sharing.of("time-slicing", cotenants=(0.5,), cotenant_memory_mb=(30_000.0,))
    assert available(crowded, 24.0).mb == 0.0
