"""Fixtures for the runner tests: workspaces, contexts, real sandboxes, real servers."""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from forge.runners import RunContext, Sandbox
from forge.tools import builtin_registry

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "workspace"
    root.mkdir()
    return root


@pytest.fixture
def make_context(workspace: Path) -> Callable[..., RunContext]:
    def make(**fields: Any) -> RunContext:
        values: dict[str, Any] = {
            "run_id": "run-1",
            "step_id": "step-1",
            "workspace": workspace,
            "timeout_s": 10.0,
        }
        return RunContext(**(values | fields))

    return make


@pytest.fixture(scope="session")
def spec() -> Callable[[str], Any]:
    return builtin_registry().get


@pytest.fixture
def bubblewrap(require_service: Callable[..., None]) -> None:
    """Skips (or fails, under FORGE_REQUIRE_SERVICES=1) when bwrap is not installed."""
    require_service("bwrap")


@pytest.fixture(params=["bwrap", "rlimits"])
def sandbox_mode(request: pytest.FixtureRequest, require_service: Callable[..., None]) -> str:
    if request.param == "bwrap":
        require_service("bwrap")
    mode: str = request.param
    return mode


@pytest.fixture
def sandbox(sandbox_mode: str) -> Sandbox:
    return Sandbox(sandbox_mode)  # type: ignore[arg-type]


@pytest.fixture(scope="session")
def processes_mentioning() -> Callable[[str], list[int]]:
    return _processes_mentioning


def _processes_mentioning(marker: str, *, settle_s: float = 2.0) -> list[int]:
    """Pids whose command line contains ``marker``, once the kernel had time to reap."""
    deadline = time.monotonic() + settle_s
    while True:
        found = []
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit() and int(entry.name) != os.getpid():
                try:
                    if marker.encode() in (entry / "cmdline").read_bytes():
                        found.append(int(entry.name))
                except OSError:
                    continue
        if not found or time.monotonic() > deadline:
            return found
        time.sleep(0.05)


class RecordingServer(ThreadingHTTPServer):
    daemon_threads = True
    requests: list[dict[str, Any]]


class _Handler(BaseHTTPRequestHandler):
    server: RecordingServer

    def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
        pass

    def _handle(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length).decode() if length else ""
        self.server.requests.append(
            {"method": self.command, "path": self.path, "headers": dict(self.headers), "body": body}
        )
        host, port = self.server.server_address[:2]
        route = self.path.split("?")[0]
        if route == "/json":
            self._send(200, json.dumps({"answer": 42}).encode(), "application/json")
        elif route == "/echo":
            echoed = {"method": self.command, "body": body}
            self._send(201, json.dumps(echoed).encode(), "application/json; charset=utf-8")
        elif route == "/text":
            self._send(200, "plain wörds".encode(), "text/plain; charset=utf-8")
        elif route == "/missing":
            self._send(404, b'{"error": "no such thing"}', "application/json")
        elif route == "/redirect-here":
            self._redirect(f"http://{host}:{port}/json")
        elif route == "/redirect-away":
            self._redirect(f"http://localhost:{port}/json")
        elif route == "/big":
            self._send(200, b"x" * (2 << 20), "application/octet-stream")
        elif route == "/big-chunked":
            self._send_chunked(b"y" * 65536, 40)
        elif route == "/slow":
            time.sleep(3)
            self._send(200, b"late", "text/plain")
        else:
            self._send(500, b"unknown route", "text/plain")

    do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = _handle

    def _send(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("X-Test", "yes")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _send_chunked(self, chunk: bytes, count: int) -> None:
        self.protocol_version = "HTTP/1.1"
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Connection", "close")
        self.end_headers()
        try:
            for _ in range(count):
                self.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
            self.wfile.write(b"0\r\n\r\n")
        except OSError:
            pass  # the client stopped reading past its cap, as it should

    def _redirect(self, location: str) -> None:
        self.send_response(302)
        self.send_header("Location", location)
        self.send_header("Content-Length", "0")
        self.end_headers()


@pytest.fixture
def http_server() -> Iterator[RecordingServer]:
    server = RecordingServer(("127.0.0.1", 0), _Handler)
    server.requests = []
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture
def sample_tools_installed(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Puts the ``forge-sample-tools`` distribution (a package and its ``.dist-info``,
    laid out as pip installs them) on ``sys.path``, where importlib.metadata finds it."""
    monkeypatch.syspath_prepend(str(FIXTURES / "site"))
    yield
    for name in [name for name in sys.modules if name.startswith("forge_sample_tools")]:
        del sys.modules[name]
