"""Start the web server (uvicorn, ``forge_web.serve``) and task workers together, stopping all
on Ctrl-C. The URL is printed once the web server answers it; a port already in use is
said in one line, before anything starts.

A worker that stops on its own (it gave up on a database away past
``FORGE_DB_OUTAGE_SECONDS``, or crashed) is started again after a capped, jittered
backoff (``forge.backoff``), with one line per restart; its steps' leases bring back what
it held. The web server stopping still stops everything, with its exit status."""

from __future__ import annotations

import errno
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from forge.backoff import Backoff

# How long the web server may take to answer before the command gives up on it.
READY_TIMEOUT_S = 120.0
# A worker that stopped is started again after 1 s, then 2, 4, ... at most a minute while
# it keeps stopping; one that ran for STABLE_S counts as well again.
RESTART = Backoff(first_s=1.0, cap_s=60.0)
STABLE_S = 60.0


class Command(BaseCommand):
    help = "Serve Forge: uvicorn for HTTP and websockets plus one Django Tasks worker."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=8000)
        parser.add_argument("--workers", type=int, default=1, help="task worker processes")

    def handle(self, *args: Any, host: str, port: int, workers: int, **options: Any) -> None:
        check_port_free(host, port)
        python = sys.executable
        commands = [[python, "-m", "forge_web.serve", "--host", host, "--port", str(port)]]
        worker = [python, "manage.py", "forge_worker"]
        if workers == 1:
            # The random wait of up to a second before a worker's first poll keeps many
            # workers started at once from polling in step; one has nobody to avoid.
            worker.append("--no-startup-delay")
        web = subprocess.Popen(commands[0])
        supervised = [Supervised(worker) for _ in range(workers)]
        stopping = False

        def stop(*_: object) -> None:
            nonlocal stopping
            stopping = True

        signal.signal(signal.SIGINT, stop)
        signal.signal(signal.SIGTERM, stop)
        url = f"http://{_url_host(host)}:{port}/"
        try:
            if wait_until_answering(url, web, lambda: stopping):
                self.stdout.write(f"Forge is running at {url}  (Ctrl-C stops it)")
            while not stopping and web.poll() is None:
                for each in supervised:
                    each.check(time.monotonic(), self.stderr.write)
                time.sleep(0.2)
        finally:
            processes = [web, *(each.process for each in supervised if each.process)]
            for process in processes:
                if process.poll() is None:
                    process.terminate()
            for process in processes:
                try:
                    process.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    process.kill()
        if web.returncode not in (0, -signal.SIGTERM, None) and not stopping:
            raise SystemExit(f"a Forge process stopped unexpectedly: {web.args}")


@dataclass
class Supervised:
    """A worker process kept running: started again, after ``RESTART``'s backoff, each
    time it stops on its own."""

    argv: list[str]
    start: Callable[[list[str]], subprocess.Popen[bytes]] = subprocess.Popen
    process: subprocess.Popen[bytes] | None = None
    restarts: int = 0  # in a row, without a stable run between them
    started_at: float = field(default_factory=time.monotonic)
    restart_at: float | None = None

    def __post_init__(self) -> None:
        if self.process is None:
            self.process = self.start(self.argv)

    def check(self, now: float, say: Callable[[str], object]) -> None:
        """Start the worker again if it is due; note it if it stopped (``say`` one line)."""
        if self.restart_at is not None:
            if now >= self.restart_at:
                self.process = self.start(self.argv)
                self.started_at, self.restart_at = now, None
            return
        assert self.process is not None
        status = self.process.poll()
        if status is None:
            if self.restarts and now - self.started_at >= STABLE_S:
                self.restarts = 0
            return
        self.restarts += 1
        delay = RESTART.delay(self.restarts)
        say(
            f"a worker (pid {self.process.pid}) stopped with exit status {status}; "
            f"starting it again in {delay:.1f} s"
        )
        self.restart_at = now + delay


def check_port_free(host: str, port: int) -> None:
    """Raise ``CommandError`` (one line, no traceback) when ``host:port`` cannot be bound."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise CommandError(f"cannot serve on host {host!r}: {exc.strerror}") from None
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
        try:
            probe.bind(address)
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise CommandError(
                    f"port {port} on {host} is already in use; stop what holds it, or choose "
                    f"another port: make run PORT={port + 1} (or forge_serve --port)"
                ) from None
            raise CommandError(f"cannot serve on {host}:{port}: {exc.strerror}") from None


def wait_until_answering(
    url: str, server: subprocess.Popen[bytes], stopping: Any, timeout_s: float = READY_TIMEOUT_S
) -> bool:
    """Whether ``url`` answered (any HTTP status) before ``server`` exited, ``stopping()``
    turned true, or ``timeout_s`` passed."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and server.poll() is None and not stopping():
        try:
            with urllib.request.urlopen(url, timeout=2):
                return True
        except urllib.error.HTTPError:
            return True  # an answer, even a refusal
        except OSError:
            time.sleep(0.05)
    return False


def _url_host(host: str) -> str:
    if host in ("0.0.0.0", ""):
        return "127.0.0.1"
    if host == "::":
        return "[::1]"
    return f"[{host}]" if ":" in host else host
