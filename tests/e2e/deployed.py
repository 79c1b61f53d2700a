"""A real deployment for browser tests of the run pages: uvicorn (pytest-django's live
server speaks WSGI and has no websockets) and ``manage.py forge_worker`` processes over a
file SQLite database loaded with ``forge_demo`` (tests.integration.deployment), and pages
logged in as its demo users: ada (author, operator) and grace (approver, operator).

A test module makes its fixtures from these (one deployment per module)::

    @pytest.fixture(scope="module")
    def deployment(tmp_path_factory):
        yield from deployed.start(tmp_path_factory, "run-pages")

    @pytest.fixture
    def open_page(browser, deployment, request):
        yield from deployed.pages(browser, deployment, request)
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.integration.deployment import Deployment

from .conftest import ARTIFACTS
from .graph import NODE_POINT

DEMO_PASSWORD = "forge-demo-2026"
STEPS = "window.forge.run.cy.nodes('[kind = \"step\"]').map(n => [n.id(), n.data('status')])"


def start(
    tmp_path_factory: pytest.TempPathFactory, name: str, **settings: str
) -> Iterator[Deployment]:
    """A deployment without a worker (tests start one when a run should move on), with
    ``settings`` in its processes' environment (``FORGE_PLANNER="..."``)."""
    running = Deployment("sqlite", tmp_path_factory.mktemp(name), extra_env=settings)
    try:
        yield running.start(workers=0)
    finally:
        running.stop()
        print(running.logs())  # pytest shows it only when a test fails


def pages(
    browser: Any, deployment: Deployment, request: pytest.FixtureRequest
) -> Iterator[Callable[[str], Any]]:
    """``open_page("ada")``: a new browser context logged in through the login form.

    Like tests/e2e/conftest.py's ``page``: a CSP violation, an uncaught error or a
    dialog (an alert() would mean injected markup ran) fails the test, and each page's
    final state is kept as a screenshot."""
    contexts: list[tuple[str, Any]] = []
    problems: list[str] = []
    folder = ARTIFACTS / re.sub(r"[^A-Za-z0-9_.-]+", "_", request.node.name)[:120]
    folder.mkdir(parents=True, exist_ok=True)

    def open_(username: str) -> Any:
        context = browser.new_context(
            base_url=deployment.base, viewport={"width": 1440, "height": 900}
        )
        context.set_default_timeout(15_000)
        page = context.new_page()
        page.on(
            "console",
            lambda message: (
                problems.append(message.text) if "Content Security Policy" in message.text else None
            ),
        )
        page.on("pageerror", lambda error: problems.append(f"uncaught: {error}"))
        page.on(
            "dialog",
            lambda dialog: (problems.append(f"dialog: {dialog.message}"), dialog.dismiss()),
        )
        page.artifacts = folder
        page.goto("/accounts/login/")
        page.fill("input[name=username]", username)
        page.fill("input[name=password]", DEMO_PASSWORD)
        page.click("form button[type=submit]")
        page.wait_for_url(re.compile(r".*/$"))
        contexts.append((username, context))
        return page

    try:
        yield open_
    finally:
        for username, context in contexts:
            try:
                context.pages[0].screenshot(path=str(folder / f"final-{username}.png"))
            finally:
                context.close()
    assert problems == [], f"the page reported problems: {problems}"


def plan_id(deployment: Deployment, name: str) -> int:
    plans = deployment.api("ada", "GET", "/plans")["items"]
    return next(plan["id"] for plan in plans if plan["name"] == name)


def stop_workers(deployment: Deployment) -> None:
    for worker in list(deployment.workers):
        deployment.kill(worker)


def ensure_worker(deployment: Deployment) -> None:
    if not deployment.workers:
        deployment.start_worker()


def open_run(page: Any, run_id: int) -> None:
    page.goto(f"/runs/{run_id}/")
    page.wait_for_selector("#run-page[data-state=ready]")


def run_id_of(page: Any) -> int:
    match = re.search(r"/runs/(\d+)/$", page.url)
    assert match, page.url
    return int(match.group(1))


def click_node(page: Any, node_id: str) -> None:
    point = page.evaluate(NODE_POINT, node_id)
    page.mouse.click(point["x"], point["y"])
    expect(page.locator("#drawer-title")).to_have_text(node_id)


def step_statuses(page: Any) -> dict[str, str]:
    return dict(page.evaluate(STEPS))


def matches_a_fresh_fetch(page: Any, deployment: Deployment, run_id: int) -> None:
    """What the page folded from events equals what the server says now."""
    mine = page.evaluate("window.forge.run.summary()")
    fresh = deployment.run(run_id)
    assert mine["status"] == fresh["status"]
    assert mine["blockedReason"] == fresh["blocked_reason"]
    assert mine["lastSeq"] == fresh["last_seq"]
    assert mine["version"] == fresh["version"]
    assert mine["budget"] == {
        "usedSteps": fresh["budget"]["used_steps"],
        "usedTokens": fresh["budget"]["used_tokens"],
        "usedCost": fresh["budget"]["used_cost"],
    }
    assert mine["steps"] == {
        step["step_id"]: {
            "status": step["status"],
            "attempt": step["attempt"],
            "output": step["output"],
            "error": step["error"],
            "tokens": step["tokens"],
            "cost": step["cost"],
            "approvedBy": step["approved_by"],
        }
        for step in fresh["steps"]
    }
