"""Live status through faults (the crowd issue): Redis killed or flushed mid-stream, and
the web process restarted. Watchers reconnect with their last seq, as the run page does;
each ends with every event exactly once, in order, and caught up within 5 s."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import websockets

from .deployment import Deployment, events_in, free_port, wait_for

pytestmark = pytest.mark.slow

STEPS = 24
SLOW_CHAIN = "goal: Poll the supplier portal until the export is ready\nsteps:\n" + "".join(
    f"  - {{id: poll{i}, description: Poll the supplier portal once more, tool: sleep, "
    f"args: {{seconds: 0.25}}{', depends_on: [poll' + str(i - 1) + ']' if i else ''}}}\n"
    for i in range(STEPS)
)
WATCHERS = 8


class PrivateRedis:
    """A Redis server of this test's own, so killing it disturbs nobody else."""

    def __init__(self, root: Path) -> None:
        self.port = free_port()
        self.root = root
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        argv = ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1",
                "--save", "", "--appendonly", "no", "--dir", str(self.root)]  # fmt: skip
        self.process = subprocess.Popen(argv, stdout=subprocess.DEVNULL)
        wait_for(lambda: self._answers(), timeout=10)

    def _answers(self) -> bool:
        ping = subprocess.run(
            ["redis-cli", "-p", str(self.port), "ping"], capture_output=True, text=True
        )
        return ping.stdout.strip() == "PONG"

    def kill(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(10)

    def flush(self) -> None:
        subprocess.run(["redis-cli", "-p", str(self.port), "flushall"], check=True,
                       capture_output=True)  # fmt: skip


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


async def _watch(deployment: Deployment, run_id: int, done: asyncio.Event) -> list[int]:
    """Like the run page: keep every event, reconnect with the last seq until the run ends."""
    seqs: list[int] = []
    while True:
        try:
            async with websockets.connect(
                deployment.ws_url(run_id, seqs[-1] if seqs else 0),
                additional_headers=deployment.ws_headers(),
                open_timeout=5,
            ) as socket:
                async for message in socket:
                    for event in events_in(message):
                        seqs.append(event["seq"])
                        if event["event_type"] == "run_succeeded":
                            return seqs
        except (OSError, websockets.WebSocketException, TimeoutError):
            pass
        if done.is_set() and seqs and seqs[-1] >= _last_seq(deployment, run_id):
            return seqs
        await asyncio.sleep(0.2)


def _last_seq(deployment: Deployment, run_id: int) -> int:
    try:
        return int(deployment.run(run_id)["last_seq"])
    except Exception:
        return 1 << 30  # the web process is down: not caught up yet


async def _crowd_through(deployment: Deployment, fault) -> tuple[list[list[int]], int, float]:
    plan_id, number = deployment.approved_plan("Supplier export", SLOW_CHAIN)
    run_id = deployment.start_run(plan_id, number)
    done = asyncio.Event()
    watchers = [asyncio.create_task(_watch(deployment, run_id, done)) for _ in range(WATCHERS)]
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
