"""Private PostgreSQL and Redis servers for fault tests: each on a free port in a directory
of its own, so that stopping or restarting one disturbs nobody else (never the machine's
shared servers). PostgreSQL refuses to run as root: as root, its commands run as the
``postgres`` user."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path

import pytest

from .deployment import free_port, wait_for

__all__ = ["PrivatePostgres", "PrivateRedis"]


def _postgres_bin() -> Path | None:
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"))
    if found:
        return found[-1].parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


class PrivatePostgres:
    """A PostgreSQL server of the test's own, of ``max_connections``: ``start``, ``stop``."""

    def __init__(self, max_connections: int = 200) -> None:
        binaries = _postgres_bin()
        if binaries is None:
            pytest.skip("PostgreSQL's server binaries (initdb, pg_ctl) are not installed")
        self.bin = binaries
        self.max_connections = max_connections
        self.port = free_port()
        # Not under pytest's root-only temporary directory: the server's user must reach it.
        self.root = Path(tempfile.mkdtemp(prefix="forge-pg-"))
        self.data = self.root / "data"
        self._owner: list[str] = []
        if os.geteuid() == 0:
            shutil.chown(self.root, "postgres", "postgres")
            self._owner = ["runuser", "-u", "postgres", "--"]
        self._run(
            self.bin / "initdb",
            "-D", str(self.data), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync",
        )  # fmt: skip

    @property
    def url(self) -> str:
        """The maintenance database's URL, as ``FORGE_TEST_DATABASE_URL`` names one."""
        return f"postgres://postgres@127.0.0.1:{self.port}/postgres"

    def _run(self, program: Path, *args: str) -> None:
        subprocess.run(
            [*self._owner, str(program), *args],
            check=True,
            capture_output=True,
            cwd=self.root,
            timeout=120,
        )

    def start(self) -> None:
        options = (
            f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.root} "
            "-c fsync=off -c synchronous_commit=off -c full_page_writes=off "
            f"-c max_connections={self.max_connections}"
        )
        self._run(
            self.bin / "pg_ctl", "-D", str(self.data), "-l", str(self.root / "server.log"),
            "-o", options, "-w", "start",
        )  # fmt: skip

    def stop(self) -> None:
        """Stop at once, as an operator's restart does: every session is terminated."""
        self._run(self.bin / "pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")

    def remove(self) -> None:
        if (self.data / "postmaster.pid").exists():
            self.stop()
        shutil.rmtree(self.root, ignore_errors=True)


class PrivateRedis:
    """A Redis server of this test's own, so killing it disturbs nobody else."""

    def __init__(self, root: Path) -> None:
        if not shutil.which("redis-server"):
            pytest.skip("redis-server is not installed")
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
