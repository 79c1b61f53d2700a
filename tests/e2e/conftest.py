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
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from django.core.servers.basehttp import ThreadedWSGIServer
from django.test.testcases import LiveServerThread
from playwright.sync_api import expect

from tests.e2e.chromium import CHROMIUM, is_browser_test


# The live server answers each connection on its own thread, at once, each with its own
# connection to the test database (a file, tests/conftest.py), as production's server
# does. Chromium opens sockets ahead of need and closes them unused: a reset while reading
# a request that never came is not the application's error.
class QuietWSGIServer(ThreadedWSGIServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


LiveServerThread.server_class = QuietWSGIServer

# On a shared, loaded machine (CI's) a worker can take longer than `expect`'s 5 s default
# to do what a test waits to see: the same 15 s as the pages' own waits.
expect.set_options(timeout=15_000)

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
