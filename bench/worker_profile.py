"""Where the worker path's time goes, counted on the wire: statements, round trips and
transactions per no-op step, and the wake-ups that go with them.

On a real PostgreSQL + Redis deployment (one worker of the default slots, a websocket
watcher connected, as ``bench.worker_path``), ``strace`` is attached to the worker and
the web process for one chain of ``--steps`` ``noop`` steps, from POST /runs to
``run_succeeded``, and every message the two processes send is decoded:

- to PostgreSQL (the frontend protocol): each ``Execute`` or simple ``Query`` is a
  statement, named by its verb and table (a prepared statement by the ``Parse`` that made
  it); each ``Sync`` or simple ``Query`` is a round trip (the client waits for the
  server's ``ReadyForQuery`` before it goes on); each ``BEGIN`` a transaction;
- to Redis: each command (the wake-ups the worker publishes, what the web's channel
  layer asks);
- from the web to the watcher: each websocket frame.

Counts, not times, so they hold on a busy machine; ``strace`` slows the processes it
watches, which changes how often wake-ups coalesce (``runs.publish``), not what a step
sends. Run: ``.venv/bin/python -m bench.worker_profile`` (needs ``strace``).
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import struct
import subprocess
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from bench.common import print_table
from bench.stream import chain, stream_latencies
from tests.integration.deployment import Deployment, wait_for

_LINE = re.compile(r"^(\d+)\s+(sendto|sendmsg|write|writev)\((\d+)<(TCP:\[[^\]]*\]|[^>]*)>, (.*)$")
_DATA = re.compile(r'"((?:\\x[0-9a-f]{2})*)"')
_PEER = re.compile(r"TCP:\[[\d.]+:(\d+)->[\d.]+:(\d+)\]")


@dataclass
class _Connection:
    """One PostgreSQL connection's outgoing stream, decoded message by message."""

    buffer: bytes = b""
    prepared: dict[str, str] = field(default_factory=dict)  # statement name -> its SQL
    bound: str = ""  # the SQL of the last Bind
    started: bool = False


@dataclass
class Wire:
    """What one process sent, by kind."""

    statements: Counter[str] = field(default_factory=Counter)
    round_trips: int = 0
    transactions: int = 0
    parses: int = 0  # statements the server parsed (and planned) anew
    redis: Counter[str] = field(default_factory=Counter)
    frames: int = 0  # websocket frames to the watcher
    syscalls: Counter[str] = field(default_factory=Counter)  # sends, by peer


def label(sql: str) -> str:
    """A statement by its verb and table: ``UPDATE runs_steprun``."""
    text = " ".join(sql.split())
    verb = text.split(" ", 1)[0].upper()
    table = re.search(r'(?:INTO|UPDATE|FROM)\s+"?(\w+)"?', text, re.IGNORECASE)
    name = f"{verb} {table.group(1)}" if table else text[:40]
    if "FOR UPDATE" in text.upper():
        name += " FOR UPDATE"
    return name


def _decode_pg(conn: _Connection, data: bytes, wire: Wire) -> None:
    conn.buffer += data
    buf = conn.buffer
    while True:
        if not conn.started and buf[:1] == b"\x00":  # a startup message: no type byte
            if len(buf) < 4 or len(buf) < struct.unpack("!i", buf[:4])[0]:
                break
            buf = buf[struct.unpack("!i", buf[:4])[0] :]
            conn.started = True
            continue
        if len(buf) < 5:
            break
        kind, length = buf[:1], struct.unpack("!i", buf[1:5])[0]
        if len(buf) < 1 + length:
            break
        body, buf = buf[5 : 1 + length], buf[1 + length :]
        conn.started = True
        if kind == b"Q":
            sql = body.rstrip(b"\x00").decode(errors="replace")
            wire.statements[label(sql)] += 1
            wire.round_trips += 1
            wire.parses += 1
            if sql.strip().upper().startswith("BEGIN"):
                wire.transactions += 1
        elif kind == b"P":
            wire.parses += 1
            name, rest = body.split(b"\x00", 1)
            conn.prepared[name.decode()] = rest.split(b"\x00", 1)[0].decode(errors="replace")
        elif kind == b"B":
            _portal, rest = body.split(b"\x00", 1)
            conn.bound = conn.prepared.get(rest.split(b"\x00", 1)[0].decode(), "?")
        elif kind == b"E":
            wire.statements[label(conn.bound)] += 1
            if conn.bound.strip().upper().startswith("BEGIN"):
                wire.transactions += 1
        elif kind == b"S":
            wire.round_trips += 1
    conn.buffer = buf


def _decode_redis(data: bytes, wire: Wire) -> None:
    # RESP arrays: *N\r\n$len\r\nCOMMAND\r\n...; the command is the first bulk string.
    for match in re.finditer(rb"\*\d+\r\n\$\d+\r\n([A-Za-z]+)\r\n", data):
        wire.redis[match.group(1).decode().upper()] += 1


def decode(trace: Path, web_port: int) -> Wire:
    wire = Wire()
    streams: dict[str, _Connection] = {}
    for line in trace.read_text(errors="replace").splitlines():
        match = _LINE.match(line)
        if not match:
            continue
        _pid, _call, _fd, target, rest = match.groups()
        peer = _PEER.search(target)
        if not peer:
            continue
        local, remote = int(peer.group(1)), int(peer.group(2))
        data = b"".join(bytes.fromhex(s.replace("\\x", "")) for s in _DATA.findall(rest))
        if remote == 5432:
            wire.syscalls["postgres"] += 1
            _decode_pg(streams.setdefault(target, _Connection()), data, wire)
        elif remote == 6379:
            wire.syscalls["redis"] += 1
            _decode_redis(data, wire)
        elif local == web_port:
            wire.syscalls["websocket"] += 1
            wire.frames += 1
    return wire


def traced(pid: int, out: Path) -> subprocess.Popen[bytes]:
    argv = ["strace", "-f", "-qq", "-yy", "-xx", "-s", "1000000", "-o", str(out)]
    argv += ["-e", "trace=sendto,sendmsg,write,writev", "-p", str(pid)]
    tracer = subprocess.Popen(argv, stderr=subprocess.DEVNULL)
    time.sleep(1.0)  # attached to every thread
    return tracer


def profile(steps: int, concurrency: int | None) -> tuple[Wire, Wire]:
    root = Path(tempfile.mkdtemp(prefix="forge-profile-"))
    deployment = Deployment("postgres", root)
    try:
        deployment.start(workers=0)
        worker = deployment.start_worker(concurrency, ready=True)
        assert deployment.web is not None
        warm = deployment.approved_plan("warm", chain(20))
        stream_latencies(deployment, deployment.start_run(*warm))
        plan = deployment.approved_plan(f"chain {steps}", chain(steps))
        time.sleep(1.0)  # the warm run's last writes and wake-ups are done
        tracers = [traced(worker.pid, root / "worker.trace")]
        tracers.append(traced(deployment.web.pid, root / "web.trace"))
        try:
            run_id = deployment.start_run(*plan)
            stream_latencies(deployment, run_id)  # returns at run_succeeded
            wait_for(lambda: deployment.run(run_id)["status"] == "succeeded")
        finally:
            for tracer in tracers:
                tracer.send_signal(signal.SIGINT)
                tracer.wait(30)
        return decode(root / "worker.trace", deployment.port), decode(
            root / "web.trace", deployment.port
        )
    finally:
        deployment.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=None, help="the worker's slots")
    options = parser.parse_args()
    one, five, _ = os.getloadavg()
    print(
        f"worker profile, chain of {options.steps} noop steps on PostgreSQL + Redis, "
        f"{time.strftime('%Y-%m-%d %H:%M')}; load average {one:.2f}, {five:.2f}"
    )
    worker, web = profile(options.steps, options.concurrency)
    n = options.steps
    for name, wire in (("worker", worker), ("web", web)):
        print(f"\n{name}: per step (whole run / {n} steps)")
        rows = [
            [label_, f"{count / n:.2f}", count] for label_, count in wire.statements.most_common()
        ]
        rows.append(
            [
                "= statements",
                f"{sum(wire.statements.values()) / n:.2f}",
                sum(wire.statements.values()),
            ]
        )
        rows.append(["= round trips", f"{wire.round_trips / n:.2f}", wire.round_trips])
        rows.append(["= transactions (BEGIN)", f"{wire.transactions / n:.2f}", wire.transactions])
        rows.append(["= parsed by the server", f"{wire.parses / n:.2f}", wire.parses])
        for command, count in wire.redis.most_common():
            rows.append([f"redis {command}", f"{count / n:.2f}", count])
        rows.append(["websocket frames", f"{wire.frames / n:.2f}", wire.frames])
        for peer, count in sorted(wire.syscalls.items()):
            rows.append([f"send syscalls to {peer}", f"{count / n:.2f}", count])
        print_table(["sent", "per step", "total"], rows)


if __name__ == "__main__":
    main()
