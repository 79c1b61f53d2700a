"""Browser tests: Playwright for Python driving Chromium against pytest-django's live server.

Chromium is Debian's headless shell, ``/usr/bin/chromium-headless-shell`` (``make test``
installs it), else ``/usr/bin/chromium``, else either on the PATH, else Playwright's own
download (``tests/e2e/chromium.py``). Without any of them the tests skip saying so,
and fail under ``FORGE_REQUIRE_SERVICES=1`` (``require_service("chromium")``).

Fixtures:

- ``browser``: one headless Chromium, shared by the test process's browser tests
  (``tests/e2e/chromium.py``).
- ``page``: a fresh browser context and page per test, 1440x900, pointed at the live
  server. Its console is watched: a Content-Security-Policy violation or an uncaught page
  error fails the test. A screenshot of the final state is always written to
  ``test-artifacts/e2e/<test>/final.png``; ``shoot(page, "name")`` keeps more.
- ``phone``: the same on a phone's screen, 390x844 (``PHONE``); ``browse(...)`` opens one
  with other context options (a time zone, say).
- ``people``: users with passwords (``people.make("ada", "author")``) and
  ``people.login(page, user)`` through the real login form.

Pages hold the strict CSP, under which Playwright's ``wait_for_function`` (it evaluates a
string) is refused; tests wait on selectors (``#editor[data-state=ready]``) instead.

``page.evaluate`` sends back what its expression returns: an expression that ends in a
Cytoscape object (``cy.getElementById(id).select()``, a ``ready`` promise resolving to the
page's hook) makes Playwright copy the whole graph, seconds of a renderer's time and once a
crashed page. Such an expression is a statement in a function body, returning nothing, or
ends in ``.then(() => true)``.
"""

from __future__ import annotations

import re
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from django.core.servers.basehttp import ThreadedWSGIServer
from django.test.testcases import LiveServerThread

from tests.e2e.chromium import CHROMIUM, is_browser_test


# One request at a time: the test database is SQLite in memory, whose one connection the
# live server's threads share, and a page's parallel requests (its scripts' fetches, the
# nav's inbox socket trying its luck) raced on it ("bad parameter or other API misuse").
# Each connection is still read on its own thread: Chromium opens sockets it sends nothing
# on yet (preconnects), and a server that reads one connection at a time sat on such a
# socket while the page's real requests waited, until a page load ran out of time.
class SerialWSGIServer(ThreadedWSGIServer):
    """Connections are read on threads; the application answers one request at a time."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._answering = threading.Lock()

    def get_app(self) -> Any:
        app = super().get_app()
        answering = self._answering

        def one_at_a_time(environ: Any, start_response: Any) -> Any:
            answering.acquire()
            try:
                return _ReleasedWhenClosed(app(environ, start_response), answering)
            except BaseException:
                answering.release()
                raise

        return one_at_a_time

    def handle_error(self, request: Any, client_address: Any) -> None:
        # Chromium closes the sockets it opened ahead of need and never used: a reset
        # while reading a request that never came is not the application's error.
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


class _ReleasedWhenClosed:
    """A response body that keeps the lock until the server has written it and closed it
    (wsgiref closes the body whether or not writing it failed)."""

    def __init__(self, body: Any, lock: threading.Lock) -> None:
        self._body = body
        self._lock = lock

    def __iter__(self) -> Iterator[bytes]:
        return iter(self._body)

    def close(self) -> None:
        try:
            if hasattr(self._body, "close"):
                self._body.close()
        finally:
            self._lock.release()


LiveServerThread.server_class = SerialWSGIServer

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "e2e"
PASSWORD = "correct-horse-battery-staple"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # Every browser test needs Chromium: tests/conftest.py skips (or, with
    # FORGE_REQUIRE_SERVICES=1, fails) them when it is missing, before any fixture runs.
    for item in items:
        if is_browser_test(Path(str(item.fspath))):
            item.add_marker(pytest.mark.requires("chromium"))


@pytest.fixture(scope="module")
def browser(django_db_setup: None, django_db_blocker: Any) -> Any:
    # The database is set up first: Django's async-unsafe check is lifted while the
    # browser is open (tests/e2e/chromium.py), which stays open for the next module.
    return CHROMIUM.open()


def _artifact_dir(request: pytest.FixtureRequest) -> Path:
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", request.node.name)[:120]
    path = ARTIFACTS / name
    path.mkdir(parents=True, exist_ok=True)
    return path


@contextmanager
def browse(
    browser: Any, live_server: Any, request: pytest.FixtureRequest, **options: Any
) -> Iterator[Any]:
    """A fresh context and page at the live server with ``options`` (Playwright's
    ``new_context``); its console is watched, and its final state kept as a screenshot."""
    context = browser.new_context(base_url=live_server.url, accept_downloads=True, **options)
    context.set_default_timeout(15_000)
    page = context.new_page()
    problems: list[str] = []
    page.on(
        "console",
        lambda message: (
            problems.append(message.text) if "Content Security Policy" in message.text else None
        ),
    )
    page.on("pageerror", lambda error: problems.append(f"uncaught: {error}"))
    page.artifacts = _artifact_dir(request)  # type: ignore[attr-defined]
    try:
        yield page
    finally:
        try:
            page.screenshot(path=str(page.artifacts / "final.png"))  # type: ignore[attr-defined]
        finally:
            context.close()
    assert problems == [], f"the page reported problems: {problems}"


@pytest.fixture
def page(
    browser: Any, live_server: Any, transactional_db: None, request: pytest.FixtureRequest
) -> Iterator[Any]:
    with browse(browser, live_server, request, viewport={"width": 1440, "height": 900}) as page:
        yield page


# A phone held upright (an iPhone 12 to 15's CSS viewport): it honours the page's
# viewport meta tag and has a touch screen, as a phone does.
PHONE = {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True}


@pytest.fixture
def phone(
    browser: Any, live_server: Any, transactional_db: None, request: pytest.FixtureRequest
) -> Iterator[Any]:
    """Like ``page``, on a phone's screen (PHONE)."""
    with browse(browser, live_server, request, **PHONE) as page:
        yield page


def shoot(page: Any, name: str) -> None:
    """Keep a screenshot under test-artifacts/e2e/<test>/<name>.png."""
    page.screenshot(path=str(page.artifacts / f"{name}.png"))


class People:
    def __init__(self, make_user: Any) -> None:
        self._make_user = make_user

    def make(self, username: str, *roles: str) -> Any:
        return self._make_user(username, *roles, password=PASSWORD)

    def login(self, page: Any, user: Any) -> None:
        page.goto("/accounts/login/")
        page.fill("input[name=username]", user.username)
        page.fill("input[name=password]", PASSWORD)
        page.click("form button[type=submit]")
        page.wait_for_url(re.compile(r".*/$"))

    def logout(self, page: Any) -> None:
        page.click("header form button[type=submit]")
        page.wait_for_url(re.compile(r".*/accounts/login/.*"))


@pytest.fixture
def people(make_user: Any) -> People:
    return People(make_user)
