"""Start the web server (uvicorn, ``forge_web.serve``) and task workers together, stopping all
on Ctrl-C. The URL is printed once the web server answers it; a port already in use is
said in one line, before anything starts."""

from __future__ import annotations

import errno
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

# How long the web server may take to answer before the command gives up on it.
READY_TIMEOUT_S = 120.0


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
        commands += [worker for _ in range(workers)]
        processes = [subprocess.Popen(command) for command in commands]
        stopping = False

        def stop(*_: object) -> None:
            nonlocal stopping
            stopping = True

        signal.signal(signal.SIGINT, stop)
        signal.signal(signal.SIGTERM, stop)
        url = f"http://{_url_host(host)}:{port}/"
        try:
            if wait_until_answering(url, processes[0], lambda: stopping):
                self.stdout.write(f"Forge is running at {url}  (Ctrl-C stops it)")
            while not stopping and all(p.poll() is None for p in processes):
                time.sleep(0.5)
        finally:
            for process in processes:
                if process.poll() is None:
                    process.terminate()
            for process in processes:
                try:
                    process.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    process.kill()
        failed = [p.args for p in processes if p.returncode not in (0, -signal.SIGTERM, None)]
        if failed and not stopping:
            raise SystemExit(f"a Forge process stopped unexpectedly: {failed[0]}")


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
