"""Starting Forge: ``forge_serve`` refuses a busy port in one line and prints its URL only
once the server answers; ``/mcp`` is built on its first request, and says 503 when it
cannot be (forge_web.mcp_startup)."""

from __future__ import annotations

import asyncio
import http.server
import socket
import subprocess
import sys
import threading
from contextlib import asynccontextmanager
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from forge_web.mcp_startup import DeferredMcp
from runs.management.commands.forge_serve import (
    Supervised,
    check_port_free,
    wait_until_answering,
)


def test_a_busy_port_is_one_line_naming_it_and_another_port():
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        with pytest.raises(CommandError) as refused:
            call_command("forge_serve", "--port", str(port))
    message = str(refused.value)
    assert "\n" not in message
    assert message == (
        f"port {port} on 127.0.0.1 is already in use; stop what holds it, or choose another "
        f"port: make run PORT={port + 1} (or forge_serve --port)"
    )


def test_a_free_port_passes_the_check():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    check_port_free("127.0.0.1", port)


def test_the_url_counts_as_answering_only_once_a_server_answers_it():
    idle = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        url = f"http://127.0.0.1:{port}/"
        assert not wait_until_answering(url, idle, lambda: False, timeout_s=0.3)

        server = http.server.HTTPServer(("127.0.0.1", port), http.server.BaseHTTPRequestHandler)
        threading.Thread(target=server.handle_request, daemon=True).start()
        try:
            assert wait_until_answering(
                url, idle, lambda: False, timeout_s=10
            )  # a 501 is an answer
        finally:
            server.server_close()
    finally:
        idle.kill()
        idle.wait()


def test_the_wait_ends_when_the_server_exits():
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    assert not wait_until_answering("http://127.0.0.1:9/", gone, lambda: False, timeout_s=10)


async def _post(app: Any) -> tuple[int, bytes]:
    said: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        said.append(message)

    await app({"type": "http", "path": "/mcp", "headers": []}, receive, send)
    return said[0]["status"], said[1]["body"]


def test_mcp_without_the_lifespan_protocol_is_503():
    status, body = asyncio.run(_post(DeferredMcp(lambda *a: None)))  # type: ignore[arg-type]
    assert status == 503
    assert b'"code": "mcp_unavailable"' in body


def test_mcp_that_cannot_start_is_503_naming_why_and_the_server_keeps_serving(monkeypatch):
    deferred = DeferredMcp(lambda *a: None)  # type: ignore[arg-type]

    def broken() -> Any:
        raise ImportError("no MCP SDK here")

    monkeypatch.setattr(deferred, "_build", broken)

    async def main() -> tuple[list[str], int, bytes]:
        inbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        said: list[str] = []

        async def send(message: dict[str, Any]) -> None:
            said.append(message["type"])

        await inbox.put({"type": "lifespan.startup"})
        life = asyncio.create_task(deferred.lifespan_app()({"type": "lifespan"}, inbox.get, send))
        while not said:
            await asyncio.sleep(0.01)
        status, body = await _post(deferred)
        await inbox.put({"type": "lifespan.shutdown"})
        await life
        return said, status, body

    said, status, body = asyncio.run(main())
    assert said == ["lifespan.startup.complete", "lifespan.shutdown.complete"]
    assert status == 503
    assert b"The MCP endpoint could not start (ImportError: no MCP SDK here)" in body


class _Endpoint:
    """Stands in for forge_web.mcp.McpEndpoint: records its session manager's life."""

    def __init__(self, log: list[str]) -> None:
        self.log = log

    @asynccontextmanager
    async def lifespan(self) -> Any:
        self.log.append("session manager started")
        yield
        self.log.append("session manager stopped")

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"served"})


def _lifespan_with(deferred: DeferredMcp, requests: int) -> list[str]:
    """Starts the lifespan, sends ``requests`` requests to /mcp, shuts it down; what
    happened, in order."""
    log: list[str] = []

    def build() -> _Endpoint:
        log.append("built")
        return _Endpoint(log)

    deferred._build = build  # type: ignore[method-assign]

    async def main() -> None:
        inbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()

        async def send(message: dict[str, Any]) -> None:
            log.append(message["type"])

        await inbox.put({"type": "lifespan.startup"})
        life = asyncio.create_task(deferred.lifespan_app()({"type": "lifespan"}, inbox.get, send))
        while not log:
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.05)  # time enough to build, were it built eagerly
        for _ in range(requests):
            status, body = await _post(deferred)
            log.append(f"{status} {body.decode()}")
        await inbox.put({"type": "lifespan.shutdown"})
        await life

    asyncio.run(main())
    return log


def test_mcp_is_built_on_its_first_request_and_stopped_at_shutdown():
    assert _lifespan_with(DeferredMcp(lambda *a: None), requests=2) == [  # type: ignore[arg-type]
        "lifespan.startup.complete",
        "built",
        "session manager started",
        "200 served",
        "200 served",
        "session manager stopped",
        "lifespan.shutdown.complete",
    ]


def test_a_process_whose_mcp_is_never_called_never_builds_it():
    assert _lifespan_with(DeferredMcp(lambda *a: None), requests=0) == [  # type: ignore[arg-type]
        "lifespan.startup.complete",
        "lifespan.shutdown.complete",
    ]


def test_the_site_loads_without_the_mcp_sdk():
    """The SDK is imported on the first /mcp request (forge_web.mcp_startup), not by the
    ASGI application's module: it was about half of the web process's start-up."""
    probe = (
        "import os, sys; os.environ['DJANGO_SETTINGS_MODULE'] = 'forge_web.settings'; "
        "import forge_web.asgi; "
        "print(sorted(m for m in sys.modules "
        "if m == 'mcp' or m.startswith(('mcp.', 'forge_web.mcp'))))"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True
    )
    loaded = result.stdout.strip().splitlines()[-1]
    assert loaded == "['forge_web.mcp_path', 'forge_web.mcp_startup']"


class _Process:
    """A worker process as ``Supervised`` sees it: running until it is told to stop."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.status: int | None = None

    def poll(self) -> int | None:
        return self.status


def test_a_worker_that_stops_is_started_again_after_a_growing_backoff_one_line_each():
    started: list[_Process] = []

    def start(argv: list[str]) -> Any:
        started.append(_Process(100 + len(started)))
        return started[-1]

    lines: list[str] = []
    worker = Supervised(["manage.py", "forge_worker"], start=start)
    now = 0.0
    worker.check(now, lines.append)
    assert len(started) == 1 and lines == []

    started[0].status = 1  # it gave up on the database (FORGE_DB_OUTAGE_SECONDS)
    worker.check(now, lines.append)
    worker.check(now, lines.append)
    assert lines[0].startswith("a worker (pid 100) stopped with exit status 1; starting it again")
    assert len(lines) == 1 and len(started) == 1
    now += 1.0  # RESTART's first delay, at most
    worker.check(now, lines.append)
    assert len(started) == 2

    started[1].status = -9
    worker.check(now, lines.append)
    first, second = (float(line.rsplit(" in ", 1)[1].split()[0]) for line in lines)
    assert second > first  # stopping again at once waits longer
    now += 2.0
    worker.check(now, lines.append)
    assert len(started) == 3 and len(lines) == 2

    now += 61  # a stable run: the next stop waits the first delay again
    worker.check(now, lines.append)
    assert worker.restarts == 0
