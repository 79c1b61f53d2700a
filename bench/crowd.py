"""A crowd watching one run: 100, 500 and 1,000 websocket watchers, embedded and with
Redis, connections paced (50 every 50 ms), each asking for the events after the seq the
run had when it connected, as the run page does.

For each deployment (embedded: SQLite, one web and one worker process, in-memory channel
layer; scale-out: PostgreSQL and Redis) and crowd size it prints: connection errors and
unexpected closes, missed events (what the database holds that a watcher never got, or got
twice), the p50 and p99 of live latency (an event's commit in the worker to its arrival
at a watcher, over every event at every watcher), the web process's CPU time and resident
memory (its peak, from /proc) during the run, and how long the crowd took to gather
(the last handshake after the paced connections began; latency is measured after it).

Goals (the crowd issue): 1,000 watchers with Redis and 500 embedded with 0 errors, 0
missed events, p99 under 250 ms with Redis and under 500 ms embedded, on a quiet 2-core
machine. Watchers and server share this machine's cores, so a loaded machine inflates
every latency: compare rows of one run, and say how busy the machine was.

Run: ``.venv/bin/python -m bench.crowd [--sizes 100,500,1000] [--kinds sqlite,postgres]
[--rounds N] [--idle SECONDS]``. ``--idle 600`` checks that watchers who hear nothing for ten
minutes stay connected (an error or a missed event in that row says otherwise).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import os
import statistics
import tempfile
import time
from datetime import datetime
from pathlib import Path
from urllib.parse import urlsplit

import msgspec

from bench.common import print_table
from tests.integration.deployment import Deployment

GOALS_MS = {"sqlite": 500.0, "postgres": 250.0}
PACE = 50  # watchers connecting at once, then a pause of PAUSE_S
PAUSE_S = 0.05
STEPS = 20


def plan(steps: int = STEPS) -> str:
    """Steps that pause a person first (so the crowd gathers before any event flows),
    then a chain of short waits: about four events a step."""
    lines = [
        "goal: Watch a supplier export being prepared",
        "requires_approval_before: [file_write]",
        "steps:",
        "  - {id: s0, description: Record that the export may start, tool: file_write,"
        " args: {path: started.txt, content: go}}",
    ]
    for i in range(1, steps):
        lines.append(
            f"  - {{id: s{i}, description: Prepare part {i} of the export, tool: sleep, "
            f"args: {{seconds: 0.1}}, depends_on: [s{i - 1}]}}"
        )
    return "\n".join(lines) + "\n"


class Event(msgspec.Struct):
    """What the bench reads of an event (decoded after the run, off the clock)."""

    seq: int
    event_type: str
    created_at: str


_decode = msgspec.json.Decoder(Event | list[Event]).decode
_FINAL = (b'"run_succeeded"', b'"run_failed"')


class WatcherProtocol(asyncio.Protocol):
    """A websocket client reduced to what a watcher does: the handshake, then unmasked
    text frames from the server, each kept raw with its arrival time; pings answered.

    A thousand full clients (the ``websockets`` library, JSON decoding per message) on the
    same two cores as the server measured mostly themselves: this one costs a few
    microseconds a message, so the latency is the server's. Messages are decoded after
    the run."""

    def __init__(self, request: bytes) -> None:
        self.request = request
        self.buffer = bytearray()
        self.upgraded = False
        self.messages: list[tuple[float, bytes]] = []
        self.fragments = bytearray()
        self.opened: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.finished: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        transport.write(self.request)

    def data_received(self, data: bytes) -> None:
        arrived = time.time()
        self.buffer += data
        if not self.upgraded:
            head, sep, _ = bytes(self.buffer).partition(b"\r\n\r\n")
            if not sep:
                return
            if not head.startswith(b"HTTP/1.1 101"):
                self._end(f"handshake refused: {head.splitlines()[0]!r}")
                return
            del self.buffer[: len(head) + 4]
            self.upgraded = True
            self.opened.set_result(None)
        while self._frame(arrived):
            pass

    def _frame(self, arrived: float) -> bool:
        buffer = self.buffer
        if len(buffer) < 2:
            return False
        fin, opcode, length, offset = buffer[0] & 0x80, buffer[0] & 0x0F, buffer[1] & 0x7F, 2
        if length == 126:
            if len(buffer) < 4:
                return False
            length, offset = int.from_bytes(buffer[2:4]), 4
        elif length == 127:
            if len(buffer) < 10:
                return False
            length, offset = int.from_bytes(buffer[2:10]), 10
        if len(buffer) < offset + length:
            return False
        payload = bytes(buffer[offset : offset + length])
        del buffer[: offset + length]
        if opcode in (0, 1):
            self.fragments += payload
            if fin:
                message, self.fragments = bytes(self.fragments), bytearray()
                self.messages.append((arrived, message))
                if any(final in message for final in _FINAL):
                    self._end("")
        elif opcode == 9:  # ping: a client's frames are masked (a zero mask will do)
            assert self.transport is not None
            self.transport.write(bytes([0x8A, 0x80 | len(payload)]) + bytes(4) + payload)
        elif opcode == 8:
            code = int.from_bytes(payload[:2]) if len(payload) >= 2 else 1005
            self._end(f"closed by the server with {code}")
        return True

    def connection_lost(self, exc: Exception | None) -> None:
        self._end(f"connection lost: {exc}")

    def _end(self, error: str) -> None:
        for future in (self.opened, self.finished):
            if not future.done():
                if error:
                    future.set_exception(ConnectionError(error))
                else:
                    future.set_result(None)
        if self.transport is not None and not error:
            self.transport.close()


class Watcher:
    def __init__(self) -> None:
        self.seqs: list[int] = []
        self.latencies_ms: list[float] = []
        self.error = ""
        self.settled = asyncio.Event()  # connected (or failed): the crowd has gathered

    async def watch(self, deployment: Deployment, run_id: int, after: int) -> None:
        url = urlsplit(deployment.ws_url(run_id, after))
        headers = {
            "Host": url.netloc,
            "Upgrade": "websocket",
            "Connection": "Upgrade",
            "Sec-WebSocket-Key": base64.b64encode(os.urandom(16)).decode(),
            "Sec-WebSocket-Version": "13",
            **deployment.ws_headers(),
        }
        request = f"GET {url.path}?{url.query} HTTP/1.1\r\n" + "".join(
            f"{name}: {value}\r\n" for name, value in headers.items()
        )
        protocol = WatcherProtocol((request + "\r\n").encode())
        loop = asyncio.get_running_loop()
        try:
            transport, _ = await loop.create_connection(lambda: protocol, url.hostname, url.port)
            try:
                await asyncio.wait_for(protocol.opened, 30)
                self.settled.set()
                await protocol.finished
            finally:
                transport.close()
        except Exception as exc:  # any failure is counted, not raised
            self.error = f"{type(exc).__name__}: {exc}"
        finally:
            self.settled.set()
        for arrived, message in protocol.messages:
            data = _decode(message)
            for event in data if isinstance(data, list) else [data]:
                created = datetime.fromisoformat(event.created_at).timestamp()
                self.latencies_ms.append((arrived - created) * 1000)
                self.seqs.append(event.seq)


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mib(pid: int, key: str = "VmHWM:") -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key):
            return int(line.split()[1]) / 1024
    return float("nan")


async def crowd(deployment: Deployment, size: int, idle_s: float = 0.0) -> list[object]:
    plan_id, number = deployment.approved_plan(f"Crowd of {size}", plan())
    run_id = deployment.start_run(plan_id, number)
    deployment.wait_status(run_id, "awaiting_approval")
    after = int(deployment.run(run_id)["last_seq"])
    watchers = [Watcher() for _ in range(size)]
    tasks = []
    for start in range(0, size, PACE):
        for watcher in watchers[start : start + PACE]:
            tasks.append(asyncio.create_task(watcher.watch(deployment, run_id, after)))
        await asyncio.sleep(PAUSE_S)
    # Latency is measured once the crowd has gathered, as the rounds were.
    connecting = time.monotonic()
    await asyncio.wait_for(asyncio.gather(*(w.settled.wait() for w in watchers)), 120)
    connect_s = time.monotonic() - connecting
    # Idle watchers must stay (the issue: ten minutes): nothing flows until the approval.
    await asyncio.sleep(max(0.5, idle_s))
    web = deployment.web
    assert web is not None
    cpu_before = cpu_seconds(web.pid)
    # Off the event loop: the watchers must go on reading while the request runs.
    await asyncio.to_thread(
        deployment.api, "grace", "POST", f"/runs/{run_id}/steps/s0/approve", {"comment": "go"}
    )
    await asyncio.wait_for(asyncio.gather(*tasks), timeout=300)
    cpu = cpu_seconds(web.pid) - cpu_before
    stored = [e["seq"] for e in deployment.api("ada", "GET", f"/runs/{run_id}/events?limit=5000")]
    expected = [seq for seq in stored if seq > after]
    errors = sum(1 for w in watchers if w.error)
    missed = sum(1 for w in watchers if not w.error and w.seqs != expected)
    latencies = [ms for w in watchers for ms in w.latencies_ms]
    p50 = statistics.median(latencies) if latencies else float("nan")
    p99 = statistics.quantiles(latencies, n=100)[98] if len(latencies) > 1 else float("nan")
    kind = deployment.kind
    verdict = "met" if (errors, missed) == (0, 0) and p99 < GOALS_MS[kind] else "NOT met"
    first_error = next((w.error for w in watchers if w.error), "")
    if first_error:
        print(f"  [{kind} x{size}] first error: {first_error}")
    return [
        kind,
        size,
        len(expected),
        errors,
        missed,
        f"{p50:.0f}",
        f"{p99:.0f}",
        f"{cpu:.1f}",
        f"{rss_mib(web.pid):.0f}",
        f"{connect_s:.1f}",
        f"{verdict} (p99 < {GOALS_MS[kind]:.0f})",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="100,500,1000")
    parser.add_argument("--kinds", default="sqlite,postgres")
    parser.add_argument("--rounds", type=int, default=1, help="rounds per size")
    parser.add_argument(
        "--idle", type=float, default=0.0, help="seconds the crowd waits, idle, before events flow"
    )
    args = parser.parse_args()
    sizes = [int(size) for size in args.sizes.split(",")]
    rows = []
    for kind in args.kinds.split(","):
        deployment = Deployment(kind, Path(tempfile.mkdtemp(prefix="forge-crowd-"))).start()
        try:
            for size in sizes:
                for _ in range(args.rounds):
                    rows.append(asyncio.run(crowd(deployment, size, args.idle)))
        finally:
            deployment.stop()
    load = os.getloadavg()
    print(f"\nload average at the end: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} (2 cores)")
    print_table(
        ["deployment", "watchers", "events", "errors", "missed", "p50 ms", "p99 ms",
         "web cpu s", "web peak MiB", "gathered s", "goal"],
        rows,
    )  # fmt: skip
    if args.rounds > 1:
        print("\nmedians of each size's rounds:")
        medians = []
        for kind in args.kinds.split(","):
            for size in sizes:
                mine = [row for row in rows if row[:2] == [kind, size]]
                p99 = statistics.median(float(str(row[6])) for row in mine)
                medians.append([kind, size, statistics.median(float(str(row[5])) for row in mine),
                                p99, sum(int(str(row[3])) + int(str(row[4])) for row in mine),
                                "met" if p99 < GOALS_MS[kind] else "NOT met"])  # fmt: skip
        print_table(["deployment", "watchers", "p50 ms", "p99 ms", "errors+missed", "goal"],
                    medians)  # fmt: skip


if __name__ == "__main__":
    main()
