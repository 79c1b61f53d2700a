"""One Playwright and one headless Chromium per test process, kept open from the first
browser test until a test that is not one runs (or the session ends).

Starting Playwright's driver and Chromium costs about 1.5 s (0.7 s of CPU), once per test
module when each module had its own; the browser tests' files run one after another on a
process (tests/conftest.py orders them), so most of them now share one.

Playwright's sync API keeps an asyncio loop marked as running in this thread while it is
open, and Django then refuses database calls from the thread ("async unsafe") though no
coroutine ever touches the database. So the check is lifted only while the browser is
open, and tests/conftest.py closes it before any test outside tests/e2e, which then runs
as usual.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

E2E = Path(__file__).resolve().parent
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    # /dev/shm of a container is often 64 MB: a renderer out of it crashes the page
    # ("Target crashed"); /tmp has room.
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
]
_UNSAFE = "DJANGO_ALLOW_ASYNC_UNSAFE"


# Debian's headless shell first: the same Chromium build in its headless-only form (what
# Playwright itself runs for headless tests), without the desktop browser's layers; the
# browser tests spent 44% less of Chromium's CPU in it (docs/ARCHITECTURE.md, "Tests").
BROWSERS = ("chromium-headless-shell", "chromium")


def chromium_path() -> str | None:
    for name in BROWSERS:
        if Path("/usr/bin", name).exists():
            return f"/usr/bin/{name}"
    for name in BROWSERS:
        if found := shutil.which(name):
            return found
    return None  # Playwright's own build, if installed


class SharedChromium:
    def __init__(self) -> None:
        self._playwright: Any = None
        self._browser: Any = None
        self._previous: str | None = None

    def open(self) -> Any:
        """The process's browser, started if it is not running."""
        if self._browser is not None and self._browser.is_connected():
            return self._browser
        self.close()
        from playwright.sync_api import sync_playwright

        self._previous = os.environ.get(_UNSAFE)
        os.environ[_UNSAFE] = "true"
        try:
            self._playwright = sync_playwright().start()
            self._browser = self._playwright.chromium.launch(
                executable_path=chromium_path(), args=CHROMIUM_ARGS
            )
        except BaseException:
            self.close()
            raise
        return self._browser

    def close(self) -> None:
        """Close the browser and Playwright, and put Django's check back."""
        browser, playwright = self._browser, self._playwright
        self._browser = self._playwright = None
        try:
            if browser is not None:
                browser.close()
        finally:
            try:
                if playwright is not None:
                    playwright.stop()
            finally:
                if playwright is not None or browser is not None:
                    if self._previous is None:
                        os.environ.pop(_UNSAFE, None)
                    else:
                        os.environ[_UNSAFE] = self._previous


CHROMIUM = SharedChromium()


def is_browser_test(path: Path) -> bool:
    return E2E in path.parents
