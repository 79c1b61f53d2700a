"""Live status through faults (the crowd issue): Redis killed or flushed mid-stream, and
the web process restarted. Watchers reconnect with their last seq, as the run page does;
each ends with every event exactly once, in order, and caught up within 5 s."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import pytest

from .deployment import Deployment, watch_run
from .services import PrivateRedis

pytestmark = pytest.mark.slow

STEPS = 24
SLOW_CHAIN = "goal: Poll the supplier portal until the export is ready\nsteps:\n" + "".join(
    f"  - {{id: poll{i}, description: Poll the supplier portal once more, tool: sleep, "
    f"args: {{seconds: 0.25}}{', depends_on: [poll' + str(i - 1) + ']' if i else ''}}}\n"
    for i in range(STEPS)
)
WATCHERS = 8


@pytest.fixture(scope="module")
def redis(tmp_path_factory, require_service) -> Iterator[PrivateRedis]:
    require_service("postgres", "redis")
    server = PrivateRedis(tmp_path_factory.mktemp("redis"))
    server.start()
    yield server
    if server.process is not None and server.process.poll() is None:
        server.kill()


@pytest.fixture(scope="module")
def deployment(redis, tmp_path_factory) -> Iterator[Deployment]:
    running = Deployment("postgres", tmp_path_factory.mktemp("faults"), redis_url=redis.url)
    try:
        yield running.start()
    finally:
        running.stop()
        print(running.logs())


async def _crowd_through(deployment: Deployment, fault) -> tuple[list[list[int]], int, float]:
    plan_id, number = deployment.approved_plan("Supplier export", SLOW_CHAIN)
    run_id = deployment.start_run(plan_id, number)
    done = asyncio.Event()
    watchers = [asyncio.create_task(watch_run(deployment, run_id, done)) for _ in range(WATCHERS)]
    await asyncio.sleep(1.5)  # mid-stream
    await asyncio.to_thread(fault)
    final = await asyncio.to_thread(
        lambda: deployment.wait_status(run_id, "succeeded", timeout=120)
    )
    stored_at = time.monotonic()
    done.set()
    seqs = await asyncio.wait_for(asyncio.gather(*watchers), timeout=30)
    return list(seqs), int(final["last_seq"]), time.monotonic() - stored_at


def _assert_every_event_once(seqs: list[list[int]], last: int, lag: float) -> None:
    for received in seqs:
        assert received == list(range(1, last + 1))
    assert lag < 5.0, f"watchers caught up {lag:.1f} s after the run ended"


def test_watchers_lose_nothing_when_redis_is_killed_mid_stream_and_comes_back(deployment, redis):
    def fault() -> None:
        redis.kill()
        time.sleep(2)
        redis.start()

    _assert_every_event_once(*asyncio.run(_crowd_through(deployment, fault)))


def test_watchers_lose_nothing_when_redis_is_flushed_mid_stream(deployment, redis):
    _assert_every_event_once(*asyncio.run(_crowd_through(deployment, redis.flush)))


def test_watchers_lose_nothing_when_the_web_process_restarts_mid_stream(deployment):
    def fault() -> None:
        assert deployment.web is not None
        deployment.kill(deployment.web)
        deployment.start_web()

    _assert_every_event_once(*asyncio.run(_crowd_through(deployment, fault)))
