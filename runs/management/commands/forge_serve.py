"""Start the web server (uvicorn, ``forge_web.serve``) and task workers together, stopping all
on Ctrl-C."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from typing import Any

from django.core.management.base import BaseCommand, CommandParser


class Command(BaseCommand):
    help = "Serve Forge: uvicorn for HTTP and websockets plus one Django Tasks worker."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=8000)
        parser.add_argument("--workers", type=int, default=1, help="task worker processes")

    def handle(self, *args: Any, host: str, port: int, workers: int, **options: Any) -> None:
        python = sys.executable
        commands = [[python, "-m", "forge_web.serve", "--host", host, "--port", str(port)]]
        commands += [[python, "manage.py", "forge_worker"] for _ in range(workers)]
        processes = [subprocess.Popen(command) for command in commands]
        self.stdout.write(f"Forge is running at http://{host}:{port}/  (Ctrl-C stops it)")
        stopping = False

        def stop(*_: object) -> None:
            nonlocal stopping
            stopping = True

        signal.signal(signal.SIGINT, stop)
        signal.signal(signal.SIGTERM, stop)
        try:
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
