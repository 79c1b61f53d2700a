"""The one backoff: doubling from the first delay, never over the cap, less a random share."""

from __future__ import annotations

import pytest

from forge.backoff import Backoff


def test_without_jitter_each_retry_waits_twice_as_long_up_to_the_cap():
    backoff = Backoff(first_s=30, cap_s=300, jitter=0)

    assert [backoff.delay(retry) for retry in range(1, 7)] == [30, 60, 120, 240, 300, 300]


def test_a_retry_number_in_the_thousands_waits_the_cap_without_overflowing():
    backoff = Backoff(first_s=30, cap_s=3600, jitter=0)

    assert backoff.delay(43) == 3600
    assert backoff.delay(5000) == 3600


def test_jitter_takes_at_most_its_share_off_each_delay():
    backoff = Backoff(first_s=10, cap_s=100, jitter=0.25)

    assert backoff.delay(2, random=lambda: 0.0) == 20
    assert backoff.delay(2, random=lambda: 0.5) == 17.5
    assert backoff.delay(5, random=lambda: 0.999) == pytest.approx(75.025)
    assert {backoff.delay(3) for _ in range(50)} != {40.0}  # the default draw varies
    assert all(30 < backoff.delay(3) <= 40 for _ in range(200))


def test_a_first_delay_over_the_cap_waits_the_cap():
    assert Backoff(first_s=600, cap_s=60, jitter=0).delay(1) == 60


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"first_s": -1, "cap_s": 10}, "first_s"),
        ({"first_s": 1, "cap_s": float("inf")}, "cap_s"),
        ({"first_s": 1, "cap_s": 10, "jitter": 1.5}, "jitter"),
    ],
)
def test_bad_settings_are_refused_when_the_backoff_is_made(fields, message):
    with pytest.raises(ValueError, match=message):
        Backoff(**fields)


def test_retries_are_counted_from_one():
    with pytest.raises(ValueError, match="from 1"):
        Backoff(first_s=1, cap_s=10).delay(0)
