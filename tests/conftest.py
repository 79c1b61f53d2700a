"""Shared fixtures: standing users for each role, API clients, and service checks.

Standing users (names equal their role): ``viewer``, ``author``, ``approver``,
``operator``, ``admin``, and ``stranger``, who is logged in but holds no role. Make
more with ``make_user("bob", "author", "approver")``.

``api_client(user)`` is a test client that sends a fresh bearer token of ``user``;
``session_client(user)`` is logged in by session and enforces CSRF like a browser.

Services: ``require_service("postgres")`` (also "redis", "chromium", "bwrap", "node")
skips the test with a message naming what is missing, or fails it when the environment
sets ``FORGE_REQUIRE_SERVICES=1`` (CI, ``.ci/run``), which also turns any other skip into a
failure: a run that must prove everything cannot pass by leaving tests out.
``@pytest.mark.requires("redis")`` does the same for a whole test.
``@pytest.mark.postgres`` marks tests about PostgreSQL itself (triggers, locks): they
run in the PostgreSQL pass of ``make test`` and are deselected when the suite runs on
SQLite.
"""

from __future__ import annotations

import atexit
import os
import shutil
import socket
import tempfile
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from hypothesis import settings as hypothesis_settings
from hypothesis.errors import InvalidArgument

from accounts.offloop import close_kept_connections
from tests.e2e.chromium import CHROMIUM, chromium_path, is_browser_test
from tests.examples import PROFILE, examples
from tests.fake_dns import FakeDns
from tests.integration import deployment

# For property tests that name no count of their own (tests/examples.py for those that do).
# Hypothesis's own "ci" profile (derandomized, no example database) is kept beneath.
try:
    _parent = hypothesis_settings.get_profile(PROFILE)
except InvalidArgument:
    _parent = None
hypothesis_settings.register_profile(PROFILE, _parent, max_examples=examples(100))
hypothesis_settings.load_profile(PROFILE)

REQUIRE_SERVICES = os.environ.get("FORGE_REQUIRE_SERVICES", "") == "1"
DEFAULT_POSTGRES_URL = "postgres://postgres@127.0.0.1:5432/test"
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/0"


_OWNS_TEMPLATES = pytest.StashKey[bool]()
_MEMORY_BACKED = "/dev/shm" if Path("/dev/shm").is_dir() else None


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "requires(*services): needs postgres, redis, chromium, bwrap, node"
    )
    config.addinivalue_line(
        "markers", "postgres: about PostgreSQL itself; runs when the suite does"
    )
    # The run's demo templates belong to the process that names the run: xdist's
    # processes, and a pytest that a test starts (tests/web/test_services.py), inherit
    # the name and must not drop what the run still copies.
    if deployment.TEST_RUN not in os.environ:
        os.environ[deployment.TEST_RUN] = uuid.uuid4().hex[:16]
        config.stash[_OWNS_TEMPLATES] = True
    from django.conf import settings

    # SQLite's test database is a file in WAL mode, as production's, in memory-backed
    # storage where there is some: Django's in-memory default shares one cache between
    # the threads of a test (a server's request threads, an approver beside an agent),
    # whose table locks fail at once ("database table is locked") where a file's wait
    # for the busy timeout. A folder of this process's own, as pytest-xdist's workers
    # and the pytest a test starts (tests/web/test_services.py) each make their database.
    database = settings.DATABASES["default"]
    if "sqlite" in database["ENGINE"] and not database.get("TEST", {}).get("NAME"):
        folder = tempfile.mkdtemp(prefix="forge-test-db-", dir=_MEMORY_BACKED)
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
        database.setdefault("TEST", {})["NAME"] = str(Path(folder) / "test.sqlite3")
    # Passwords hashed for real cost seconds across a suite; tests need no such strength.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    # No test is throttled by accident: generous rates (accounts.throttling), which the
    # tests of the limits lower for themselves.
    settings.FORGE_API_RATE = settings.FORGE_API_COMPILE_RATE = "1000000/min"
    settings.FORGE_API_ANON_RATE = "1000000/min"


# --- Services -------------------------------------------------------------------------


def _reachable(url: str, default_port: int) -> bool:
    parts = urlsplit(url)
    try:
        with socket.create_connection(
            (parts.hostname or "127.0.0.1", parts.port or default_port), 2
        ):
            return True
    except OSError:
        return False


def _postgres_missing() -> str | None:
    url = os.environ.get("DATABASE_URL", "")
    if not url.startswith(("postgres://", "postgresql://")):
        url = DEFAULT_POSTGRES_URL
    if _reachable(url, 5432):
        return None
    return f"PostgreSQL is not reachable at {urlsplit(url).netloc}"


def _redis_missing() -> str | None:
    url = os.environ.get("REDIS_URL") or DEFAULT_REDIS_URL
    if not _reachable(url, 6379):
        return f"Redis is not reachable at {urlsplit(url).netloc}"
    import redis

    try:
        redis.Redis.from_url(url, socket_timeout=2).ping()
    except redis.RedisError as exc:
        return f"Redis at {urlsplit(url).netloc} does not answer PING ({exc})"
    return None


def _chromium_missing() -> str | None:
    if chromium_path() is not None:
        return None
    try:
        from playwright.sync_api import sync_playwright

        with sync_playwright() as playwright:
            if Path(playwright.chromium.executable_path).exists():
                return None
    except Exception:  # any failure means: no usable browser
        pass
    return (
        "Chromium is not installed (apt-get install chromium-headless-shell, or playwright"
        " install chromium)"
    )


def _bwrap_missing() -> str | None:
    return None if shutil.which("bwrap") else "bubblewrap (bwrap) is not installed"


def _node_missing() -> str | None:
    return None if shutil.which("node") else "Node.js is not installed (apt-get install nodejs)"


SERVICES: dict[str, Callable[[], str | None]] = {
    "postgres": _postgres_missing,
    "redis": _redis_missing,
    "chromium": _chromium_missing,
    "bwrap": _bwrap_missing,
    "node": _node_missing,
}


def require_service(*names: str) -> None:
    """Skip (or, with FORGE_REQUIRE_SERVICES=1, fail) unless every named service is there."""
    for name in names:
        missing = SERVICES[name]()
        if missing:
            if REQUIRE_SERVICES:
                pytest.fail(f"{missing} (FORGE_REQUIRE_SERVICES=1)", pytrace=False)
            pytest.skip(f"{missing}; set FORGE_REQUIRE_SERVICES=1 to fail instead")


def pytest_sessionfinish(session: pytest.Session) -> None:
    CHROMIUM.close()
    if session.config.stash.get(_OWNS_TEMPLATES, False):  # after every test process is done
        deployment.drop_shared_templates()


def pytest_runtest_setup(item: pytest.Item) -> None:
    if not is_browser_test(Path(str(item.fspath))):
        CHROMIUM.close()  # Django's async-unsafe check back on for tests outside tests/e2e
    for marker in item.iter_markers("requires"):
        require_service(*marker.args)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """Under ``FORGE_REQUIRE_SERVICES=1`` a skipped test fails, whatever skipped it (a
    ``skipif``, a missing library, ``pytest.skip``), with the skip's reason."""
    outcome = yield
    report = outcome.get_result()
    if REQUIRE_SERVICES and report.skipped and not hasattr(report, "wasxfail"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else report.longrepr
        report.outcome = "failed"
        report.longrepr = f"skipped, and FORGE_REQUIRE_SERVICES=1 fails every skip: {reason}"


# Last, after pytest-django's own sort by kind of test, which would split the files again.
@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests about PostgreSQL itself belong to the PostgreSQL pass (``make test`` runs
    tests/web again with DATABASE_URL): on SQLite they are deselected, not skipped, so
    that a skip always means a missing service."""
    from django.conf import settings

    # Django's backend, or Forge's with a connection pool (forge_web.postgresql).
    if "postgresql" not in settings.DATABASES["default"]["ENGINE"]:
        kept = [item for item in items if not item.get_closest_marker("postgres")]
        if len(kept) != len(items):
            config.hook.pytest_deselected(items=[i for i in items if i not in kept])
            items[:] = kept
    # Slow files first, then browser tests, then the rest (a file's tests together, in
    # the order they had). With ``--dist loadfile`` and ``--no-loadscope-reorder``
    # (the Makefile) xdist hands out files in this order, so the minute-long files do not
    # start last and leave the other processes idle at the end: xdist's own order, by
    # number of tests per file, put the one-test fuzzing file last.
    slow = {item.path for item in items if item.get_closest_marker("slow")}
    first = {}
    for index, item in enumerate(items):
        first.setdefault(item.path, index)

    def start_order(item: pytest.Item) -> tuple[int, int]:
        kind = 0 if item.path in slow else 1 if "e2e" in item.path.parts else 2
        return kind, first[item.path]

    items.sort(key=start_order)


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup: None) -> Iterator[None]:
    """pytest-django's, and before it drops the test database, the connections that the
    websockets' database threads keep (``accounts.offloop``) are closed: PostgreSQL drops
    no database someone is still connected to."""
    yield
    close_kept_connections()


@pytest.fixture(name="require_service", scope="session")
def require_service_fixture() -> Callable[..., None]:
    return require_service


# --- Audit anchors ----------------------------------------------------------------------


@pytest.fixture(autouse=True)
def audit_anchor_log(request: pytest.FixtureRequest, tmp_path_factory: Any) -> Any:
    """Each test that touches the database writes audit anchors to a file of its own: never
    to the repository, and never to a log naming rows of an earlier test's database."""
    uses_db = request.node.get_closest_marker("django_db") or {
        "db",
        "transactional_db",
        "live_server",
    } & set(request.fixturenames)
    if not uses_db:
        yield None
        return
    from django.conf import settings

    path = tmp_path_factory.mktemp("anchors") / "audit-anchors.jsonl"
    before = settings.FORGE_AUDIT_ANCHOR_PATH
    settings.FORGE_AUDIT_ANCHOR_PATH = str(path)
    try:
        yield path
    finally:
        settings.FORGE_AUDIT_ANCHOR_PATH = before


# --- Users and clients ----------------------------------------------------------------


@pytest.fixture
def make_user(db: None) -> Callable[..., Any]:
    from accounts.models import User

    def make(username: str, *roles: str, password: str | None = None, **fields: Any) -> User:
        user = User(username=username, **fields)
        user.set_roles(list(roles))
        if password is None:
            user.set_unusable_password()
        else:
            user.set_password(password)
        user.save()
        return user

    return make


@pytest.fixture
def viewer(make_user: Callable[..., Any]) -> Any:
    return make_user("viewer", "viewer")


@pytest.fixture
def author(make_user: Callable[..., Any]) -> Any:
    return make_user("author", "author")


@pytest.fixture
def approver(make_user: Callable[..., Any]) -> Any:
    return make_user("approver", "approver")


@pytest.fixture
def operator(make_user: Callable[..., Any]) -> Any:
    return make_user("operator", "operator")


@pytest.fixture
def admin(make_user: Callable[..., Any]) -> Any:
    return make_user("admin", "admin")


@pytest.fixture
def auditor(make_user: Callable[..., Any]) -> Any:
    return make_user("auditor", "auditor")


@pytest.fixture
def stranger(make_user: Callable[..., Any]) -> Any:
    return make_user("stranger")


@pytest.fixture
def token_for(db: None) -> Callable[..., str]:
    """``token_for(user, name="test")``: a new API token's value for ``user``."""
    from accounts import services

    def make(user: Any, name: str = "test") -> str:
        return services.create_token(user, name, actor=user.username)[1]

    return make


@pytest.fixture
def api_client(token_for: Callable[..., str]) -> Callable[..., Any]:
    """``api_client(user)``: a client whose every request carries a bearer token of ``user``."""
    from django.test import Client

    def make(user: Any) -> Client:
        return Client(headers={"authorization": f"Bearer {token_for(user)}"})

    return make


@pytest.fixture
def session_client(db: None) -> Callable[..., Any]:
    """``session_client(user)``: logged in by session, CSRF enforced (like a browser)."""
    from django.test import Client

    def make(user: Any) -> Client:
        client = Client(enforce_csrf_checks=True)
        client.force_login(user)
        return client

    return make


@pytest.fixture
def anonymous_client() -> Iterator[Any]:
    from django.test import Client

    yield Client(enforce_csrf_checks=True)


@pytest.fixture
def dns(monkeypatch: pytest.MonkeyPatch) -> Any:
    """What names resolve to, as an attacker who controls their DNS sets it
    (``tests/fake_dns.py``)."""
    return FakeDns(monkeypatch)
