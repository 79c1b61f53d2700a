"""A real Forge deployment for integration tests: web (uvicorn) and worker processes over a
fresh database (an SQLite file, or a new PostgreSQL database with Redis as the channel
layer), driven only through HTTP and websockets, as users and scripts drive it. The
PostgreSQL server and Redis are the machine's unless a test names private ones
(``tests/integration/services.py``), which it may then stop and restart."""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import psycopg
import websockets

REPO = Path(__file__).resolve().parents[2]
POSTGRES = os.environ.get("FORGE_TEST_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/test")
REDIS = os.environ.get("FORGE_TEST_REDIS_URL", "redis://127.0.0.1:6379/7")


# load_demo's commands, run by ``manage.py shell -c``; the last line printed is the tokens.
_LOAD_DEMO = """
import io, json
from django.core.management import call_command
call_command("migrate", "--no-input", verbosity=0)
call_command("forge_demo", stdout=io.StringIO())
tokens = {}
for user in ("ada", "grace"):
    out = io.StringIO()
    call_command("forge_user", user, "--token", stdout=out)
    tokens[user] = out.getvalue().strip().splitlines()[-1]
print(json.dumps(tokens))
"""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for(check: Callable[[], Any], timeout: float = 30.0, interval: float = 0.1) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting after {timeout} s")
        time.sleep(interval)


@dataclass
class Deployment:
    kind: str  # "sqlite" or "postgres"
    root: Path
    env: dict[str, str] = field(default_factory=dict)
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)
    workers: list[subprocess.Popen[bytes]] = field(default_factory=list)
    port: int = 0
    tokens: dict[str, str] = field(default_factory=dict)
    redis_url: str = REDIS
    postgres_url: str = POSTGRES  # the server's maintenance database
    _database: str = ""
    web: subprocess.Popen[bytes] | None = None
    extra_env: dict[str, str] = field(default_factory=dict)  # settings of this deployment

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, workers: int = 1, *, serve: bool = False) -> Deployment:
        """Web and ``workers`` worker processes over a copy of the demo's database; with
        ``serve``, ``manage.py forge_serve`` instead (the web server and one worker, as
        ``make run`` starts them)."""
        env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO", "PYTEST"))}
        env.update(
            # Forge's settings with a fast password hasher (tests/integration/settings.py).
            DJANGO_SETTINGS_MODULE="tests.integration.settings",
            FORGE_WORKSPACES=str(self.root / "workspaces"),
            FORGE_AUDIT_ANCHOR_PATH=str(self.root / "audit-anchors.jsonl"),
            FORGE_STEP_LEASE_SECONDS="2",
            # The tests poll the API faster than a person may (accounts.throttling).
            FORGE_API_RATE="1000000/min",
            FORGE_API_COMPILE_RATE="1000000/min",
            PYTHONUNBUFFERED="1",
        )
        env.update(self.extra_env)
        if self.kind == "sqlite":
            env["DATABASE_URL"] = f"sqlite:///{self.root / 'forge.sqlite3'}"
            env.pop("REDIS_URL", None)
        else:
            self._database = f"forge_it_{uuid.uuid4().hex[:10]}"
            env["DATABASE_URL"] = self.postgres_url.rsplit("/", 1)[0] + "/" + self._database
            env["REDIS_URL"] = self.redis_url
        self.env = env
        self.tokens = _demo_template(self.kind, env, self.postgres_url).copy_to(self)
        self.port = free_port()
        if serve:
            argv = [sys.executable, "manage.py", "forge_serve", "--port", str(self.port)]
            self.web = self._spawn(argv, "serve")
            self.processes.append(self.web)
            wait_for(self._answers, timeout=60)
            return self
        self.start_web()
        for _ in range(workers):
            self.start_worker()
        return self

    def load_demo(self) -> dict[str, str]:
        """Load the demo into this deployment's database (migrating it first where a
        migration is missing) and make ada's and grace's API tokens (``forge_demo`` and
        ``forge_user NAME --token``)."""
        # The commands in one process: each manage.py process costs a second of Django's
        # start-up, and a run of the suite makes several templates.
        out = self.manage("shell", "-c", _LOAD_DEMO)
        return json.loads(out.strip().splitlines()[-1])

    def start_web(self) -> subprocess.Popen[bytes]:
        """The web process, on this deployment's port (again, after a restart)."""
        argv = [sys.executable, "-m", "forge_web.serve", "--host", "127.0.0.1"]
        self.web = self._spawn([*argv, "--port", str(self.port)], "web")
        self.processes.append(self.web)
        wait_for(self._answers)
        return self.web

    def _spawn(self, argv: list[str], name: str) -> subprocess.Popen[bytes]:
        log = (self.root / f"{name}-{len(self.processes)}.log").open("wb")
        return subprocess.Popen(argv, cwd=REPO, env=self.env, stdout=log, stderr=subprocess.STDOUT)

    def start_worker(
        self, concurrency: int | None = None, *, timings: bool = False, ready: bool = False
    ) -> subprocess.Popen[bytes]:
        """A worker process (``concurrency`` slots, else the setting's default); with
        ``ready``, once it takes tasks."""
        argv = [sys.executable, "manage.py", "forge_worker", "--interval", "0.05"]
        if concurrency is not None:
            argv += ["--concurrency", str(concurrency)]
        if timings:
            argv.append("--timings")
        worker = self._spawn(argv, "worker")
        self.processes.append(worker)
        self.workers.append(worker)
        if ready:
            log = self.root / f"worker-{len(self.processes) - 1}.log"
            wait_for(lambda: worker.poll() is not None or "steps at once" in log.read_text())
            if worker.poll() is not None:
                raise AssertionError(f"the worker stopped:\n{log.read_text()[-3000:]}")
        return worker

    def stop_worker(self, worker: subprocess.Popen[bytes]) -> str:
        """Stop a worker as Ctrl-C does (running steps finish first); its log."""
        index = self.processes.index(worker)
        worker.terminate()
        worker.wait(60)
        self.workers.remove(worker)
        return (self.root / f"worker-{index}.log").read_text(errors="replace")

    def kill(self, process: subprocess.Popen[bytes]) -> None:
        process.send_signal(signal.SIGKILL)
        process.wait(10)
        if process in self.workers:
            self.workers.remove(process)

    def manage(self, *args: str) -> str:
        result = subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=REPO,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        if result.returncode != 0:
            raise AssertionError(f"manage.py {' '.join(args)} failed:\n{result.stderr}")
        return result.stdout

    def _answers(self) -> bool:
        try:
            return httpx.get(f"{self.base}/api/v1/openapi.json", timeout=1).status_code == 200
        except httpx.HTTPError:
            return False

    def api(self, user: str, method: str, path: str, body: Any = None) -> Any:
        response = httpx.request(
            method,
            f"{self.base}/api/v1{path}",
            json=body,
            timeout=30,
            headers={"Authorization": f"Bearer {self.tokens[user]}"},
        )
        assert response.status_code < 300, (response.status_code, response.text)
        return response.json() if response.content else None

    def approved_plan(self, name: str, source: str) -> tuple[int, int]:
        created = self.api(
            "ada", "POST", "/plans", {"name": name, "format": "yaml", "source": source}
        )
        plan_id, number = created["id"], created["latest_version"]["number"]
        self.api("grace", "POST", f"/plans/{plan_id}/versions/{number}/approve", {"comment": "ok"})
        return plan_id, number

    def start_run(self, plan_id: int, number: int) -> int:
        return int(self.api("ada", "POST", "/runs", {"plan_id": plan_id, "version": number})["id"])

    def run(self, run_id: int) -> Any:
        return self.api("ada", "GET", f"/runs/{run_id}")

    def wait_status(self, run_id: int, *statuses: str, timeout: float = 60) -> Any:
        return wait_for(lambda: (r := self.run(run_id))["status"] in statuses and r, timeout)

    def ws_url(self, run_id: int, after: int = 0) -> str:
        return f"ws://127.0.0.1:{self.port}/ws/runs/{run_id}/?after={after}"

    def ws_headers(self, user: str = "ada") -> dict[str, str]:
        return {"Authorization": f"Bearer {self.tokens[user]}", "Origin": self.base}

    def logs(self) -> str:
        return "\n".join(
            f"--- {path.name}\n{path.read_text(errors='replace')[-3000:]}"
            for path in sorted(self.root.glob("*.log"))
        )

    def stop(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                process.terminate()
        for process in self.processes:
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
        if self._database:
            statement = f'DROP DATABASE IF EXISTS "{self._database}" WITH (FORCE)'
            _on_server(self.postgres_url, statement)


class RawRequest:
    """One POST on a raw socket, its body written by the caller while a thread reads the
    answer, so the caller knows how much of the body was sent when the answer came."""

    def __init__(
        self, deployment: Deployment, headers: dict[str, str], path: str = "/api/v1/plans"
    ) -> None:
        self.sock = socket.create_connection(("127.0.0.1", deployment.port), timeout=30)
        lines = [f"POST {path} HTTP/1.1", f"Host: 127.0.0.1:{deployment.port}"]
        lines += [f"{name}: {value}" for name, value in headers.items()]
        self.sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        self.sent = 0
        self.received = b""
        self.answered = threading.Event()  # the status line and headers are in
        self.closed = threading.Event()  # the server closed the connection
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        try:
            while chunk := self.sock.recv(65536):
                self.received += chunk
                if b"\r\n\r\n" in self.received:
                    self.answered.set()
        except OSError:
            pass
        self.closed.set()
        self.answered.set()

    def send(self, data: bytes) -> bool:
        """Write ``data`` unless an answer came already; False once the server answered
        or stopped reading."""
        if self.answered.is_set():
            return False
        try:
            self.sock.sendall(data)
        except OSError:
            return False
        self.sent += len(data)
        return True

    def response(self, timeout: float) -> tuple[int, dict[str, str], bytes]:
        if not self.answered.wait(timeout):
            raise AssertionError(f"no answer within {timeout} s, {self.sent} bytes sent")
        if b"\r\n\r\n" not in self.received:
            raise AssertionError(f"closed without an answer, {self.sent} bytes sent")
        head, _, body = self.received.partition(b"\r\n\r\n")
        status_line, *header_lines = head.decode().split("\r\n")
        headers = {
            name.lower(): value for name, value in (line.split(": ", 1) for line in header_lines)
        }
        deadline = time.monotonic() + timeout
        length = int(headers.get("content-length", "0"))
        while len(body) < length and not self.closed.is_set() and time.monotonic() < deadline:
            time.sleep(0.05)
            body = self.received.partition(b"\r\n\r\n")[2]
        return int(status_line.split()[1]), headers, body

    def close(self) -> None:
        self.sock.close()


def events_in(message: str | bytes) -> list[dict[str, Any]]:
    """The events of one websocket message: an event, or an array of consecutive ones."""
    data = json.loads(message)
    return data if isinstance(data, list) else [data]


async def watch_run(
    deployment: Deployment, run_id: int, done: asyncio.Event | None = None
) -> list[int]:
    """Like the run page: keep every event's seq, reconnecting with the last one whenever
    the socket drops, until the run succeeds; or, once ``done`` is set, until the watcher
    has caught up with the run's last event (a run that ended while it was away)."""
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
        if (
            done is not None
            and done.is_set()
            and seqs
            and seqs[-1] >= _last_seq(deployment, run_id)
        ):
            return seqs
        await asyncio.sleep(0.2)


def _last_seq(deployment: Deployment, run_id: int) -> int:
    try:
        return int(deployment.run(run_id)["last_seq"])
    except Exception:
        return 1 << 30  # the web process is down: not caught up yet


# Every deployment starts from the same migrated demo: made once per test run, kind and
# demo-relevant settings, shared by the run's test processes, then copied (an SQLite file,
# or a PostgreSQL database made from it as a template), instead of the twelve seconds of
# manage.py processes per deployment.
_ROOT_FILES = ("forge.sqlite3", "forge.sqlite3-wal", "forge.sqlite3-shm", "audit-anchors.jsonl")
# One directory per test run, one folder per template in it, made under a lock so that
# one process builds what the others copy. The run's id is FORGE_TEST_RUN, which
# tests/conftest.py sets before xdist starts the processes that inherit it.
TEST_RUN = "FORGE_TEST_RUN"


def _run_id() -> str:
    return os.environ.get(TEST_RUN, f"p{os.getpid()}")


def shared_templates() -> Path:
    return Path(tempfile.gettempdir()) / f"forge-demo-templates-{_run_id()}"


def _on_server(postgres_url: str, statement: str) -> None:
    """One statement outside a transaction (CREATE and DROP DATABASE) on the server's
    maintenance database; a server that does not answer within 3 s is an error."""
    with psycopg.connect(postgres_url, autocommit=True, connect_timeout=3) as conn:
        conn.execute(statement)


@dataclass(frozen=True)
class _DemoTemplate:
    root: Path
    database: str  # the PostgreSQL template database, "" for SQLite
    tokens: dict[str, str]
    postgres_url: str = POSTGRES

    def copy_to(self, deployment: Deployment) -> dict[str, str]:
        """The demo in ``deployment``'s own database and root; the demo users' tokens."""
        for name in _ROOT_FILES:
            if (self.root / name).exists():
                shutil.copyfile(self.root / name, deployment.root / name)
        if self.database:
            statement = f'CREATE DATABASE "{deployment._database}" TEMPLATE "{self.database}"'
            _on_server(self.postgres_url, statement)
        return dict(self.tokens)

    def drop(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)
        if self.database:
            # A private server (tests/integration/services.py) may be gone with its data.
            with contextlib.suppress(psycopg.OperationalError):
                _on_server(
                    self.postgres_url, f'DROP DATABASE IF EXISTS "{self.database}" WITH (FORCE)'
                )


_TEMPLATES: dict[str, _DemoTemplate] = {}
_OWN_PATHS = {"FORGE_WORKSPACES", "FORGE_AUDIT_ANCHOR_PATH"}
# Settings that change how a deployment's processes behave, never the rows the demo
# loads (users, tokens, plans compiled against the tools, policy and rules): deployments
# differing only in these share a template.
_RUNTIME_ONLY = frozenset(
    {
        "FORGE_MODEL",
        "FORGE_PLANNER",
        "FORGE_PLANNER_BASE_URL",
        "FORGE_PLANNER_ATTEMPTS",
        "FORGE_AGENT_STEP_TOKENS",
        "FORGE_STEP_LEASE_SECONDS",
        "FORGE_WORKER_CONCURRENCY",
        "FORGE_DB_POOL_MIN",
        "FORGE_DB_POOL_MAX",
        "FORGE_DB_OUTAGE_SECONDS",
        "FORGE_API_RATE",
        "FORGE_API_COMPILE_RATE",
        "FORGE_GATEWAY_HOLD_SECONDS",
    }
)


def _demo_template(kind: str, env: dict[str, str], postgres_url: str = POSTGRES) -> _DemoTemplate:
    """The demo for ``kind``, made with the Forge settings in ``env`` (the tools and the
    policy the demo's plans compile with, its MCP servers' sessions): deployments whose
    demo-relevant settings differ get their own."""
    settings = sorted(
        (k, v)
        for k, v in env.items()
        if k.startswith("FORGE_") and k not in _OWN_PATHS and k not in _RUNTIME_ONLY
    )
    server = postgres_url if kind == "postgres" else ""
    key = hashlib.sha256(json.dumps([kind, server, settings]).encode()).hexdigest()[:16]
    if key not in _TEMPLATES:

        def build(maker: Deployment) -> dict[str, str]:
            _migrated(kind, env, postgres_url).copy_to(maker)
            return maker.load_demo()

        _TEMPLATES[key] = _made_once(key, kind, env, postgres_url, build)
    return _TEMPLATES[key]


def _made_once(
    name: str,
    kind: str,
    env: dict[str, str],
    postgres_url: str,
    build: Callable[[Deployment], dict[str, str]],
) -> _DemoTemplate:
    """The run's template ``name``: made by ``build`` (which returns the demo users'
    tokens) over a fresh root and database, under a file lock, by the first process of
    the run that needs it; the others wait, then copy what it made."""
    shared = shared_templates()
    shared.mkdir(parents=True, exist_ok=True)
    root = shared / name
    with (shared / f"{name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # the others wait for the one that builds
        if not (root / "template.json").exists():
            shutil.rmtree(root, ignore_errors=True)  # what a process killed while building left
            root.mkdir(parents=True)
            maker = Deployment(kind, root, postgres_url=postgres_url)
            maker.env = {**env, "FORGE_WORKSPACES": str(root / "workspaces")}
            maker.env["FORGE_AUDIT_ANCHOR_PATH"] = str(root / "audit-anchors.jsonl")
            if kind == "sqlite":
                maker.env["DATABASE_URL"] = f"sqlite:///{root / 'forge.sqlite3'}"
            else:
                maker._database = f"forge_{_run_id()}_{name}".replace("-", "_")
                maker.env["DATABASE_URL"] = postgres_url.rsplit("/", 1)[0] + "/" + maker._database
            tokens = build(maker)
            made = {"database": maker._database, "postgres_url": postgres_url, "tokens": tokens}
            (root / "template.json").write_text(json.dumps(made))  # last: the template is whole
    made = json.loads((root / "template.json").read_text())
    return _DemoTemplate(root, made["database"], made["tokens"], postgres_url)


def _migrated(kind: str, env: dict[str, str], postgres_url: str) -> _DemoTemplate:
    """An empty database with every migration applied, one per run, kind and server,
    from which each demo template starts: Django's migrations (rendering the models'
    states) were two thirds of a template's 10 s of CPU, the same work for every one."""
    server = postgres_url if kind == "postgres" else ""
    digest = hashlib.sha256(json.dumps([kind, server]).encode()).hexdigest()[:16]

    def build(maker: Deployment) -> dict[str, str]:
        if maker._database:
            _on_server(postgres_url, f'CREATE DATABASE "{maker._database}"')
        maker.manage("migrate", "--no-input")
        return {}

    # Migrations read no Forge setting: one base serves every set of them.
    base = {k: v for k, v in env.items() if not k.startswith("FORGE_")}
    return _made_once(f"migrated-{digest}", kind, base, postgres_url, build)


def drop_shared_templates() -> None:
    """Drop the run's demo templates (from its last process: pytest_sessionfinish)."""
    shared = shared_templates()
    for made in shared.glob("*/template.json"):
        data = json.loads(made.read_text())
        _DemoTemplate(made.parent, data["database"], {}, data["postgres_url"]).drop()
    shutil.rmtree(shared, ignore_errors=True)
