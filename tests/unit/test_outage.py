"""An outage is a state: logged once when it starts and once when it ends, with its length."""

from __future__ import annotations

import logging
import threading

import pytest

from forge.outage import Outage


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def outage(clock: Clock) -> Outage:
    return Outage("the database", logging.getLogger("test.outage"), clock=clock)


def lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [record.getMessage() for record in caplog.records if record.name == "test.outage"]


def test_a_hundred_failures_and_a_hundred_successes_log_one_start_and_one_end(
    outage, clock, caplog
):
    caplog.set_level(logging.INFO)
    started = [outage.failed(OSError("connection refused\nDETAIL: more")) for _ in range(100)]
    clock.now += 4.25
    ended = [outage.recovered() for _ in range(100)]

    assert started == [True] + [False] * 99
    assert ended == [4.25] + [None] * 99
    assert lines(caplog) == [
        "the database is unavailable (OSError: connection refused)",
        "the database is back after 4.2 s",
    ]
    assert all(not record.exc_info for record in caplog.records)


def test_each_outage_is_logged_with_its_own_length(outage, clock, caplog):
    caplog.set_level(logging.INFO)
    outage.failed("refused")
    clock.now += 1
    outage.recovered()
    clock.now += 50
    outage.failed("refused")
    clock.now += 0.3
    outage.recovered()

    assert lines(caplog)[1::2] == [
        "the database is back after 1.0 s",
        "the database is back after 0.3 s",
    ]


def test_success_without_an_outage_logs_nothing(outage, caplog):
    caplog.set_level(logging.DEBUG)

    assert outage.recovered() is None
    assert lines(caplog) == []


def test_the_state_says_whether_and_how_long_the_service_is_away(outage, clock):
    assert not outage.down
    assert outage.seconds_down() == 0.0
    assert outage.seconds_up() == float("inf")  # up since the process started

    outage.failed("refused")
    clock.now += 7
    assert outage.down
    assert outage.seconds_down() == 7.0

    outage.recovered()
    clock.now += 2
    assert not outage.down
    assert outage.seconds_up() == 2.0


def test_retry_after_grows_with_the_outage_and_stays_under_the_cap(outage, clock):
    outage.failed("refused")
    first = outage.retry_after()
    clock.now += 600

    assert 1 <= first <= 2
    assert all(1 <= outage.retry_after() <= 30 for _ in range(100))
    assert max(outage.retry_after() for _ in range(100)) > 10


def test_threads_failing_together_start_one_outage(outage, caplog):
    caplog.set_level(logging.INFO)
    barrier = threading.Barrier(8)
    started: list[bool] = []

    def fail() -> None:
        barrier.wait()
        started.append(outage.failed("refused"))

    threads = [threading.Thread(target=fail) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert sorted(started) == [False] * 7 + [True]
    assert len(lines(caplog)) == 1
