"""The inbox and the home page in Chromium (issue 12, problem 4: authors never learned why
a version was rejected). The author finds the rejection and its comment from the nav's
count and opens the exact version; the home page lists what needs each person; against a
real deployment (uvicorn, websockets), the nav's count changes while the page is open.
Screenshots go to test-artifacts/e2e/<test>/."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from playwright.sync_api import expect

from forge.plan import from_data
from plans import services as plan_services
from runs import services as run_services
from tests.integration.deployment import Deployment
from tests.web.runs_helpers import FAILING_STEPS, drain

from . import deployed
from .conftest import shoot

COMMENT = "The publish step writes to the board folder: send it to drafts/ first."
PLAN = {
    "goal": "Publish the quarterly supplier review",
    "requires_approval_before": ["file_write"],
    "steps": [
        {"id": "collect", "description": "Collect scores", "tool": "echo", "args": {"n": 3}},
        {
            "id": "publish",
            "description": "Write the review",
            "tool": "file_write",
            "args": {"path": "board/q3.md", "content": "# Q3\n"},
            "depends_on": ["collect"],
        },
    ],
}


@pytest.fixture
def workspaces(settings, tmp_path):
    settings.FORGE_WORKSPACES = str(tmp_path / "workspaces")


@pytest.mark.django_db(transaction=True)
def test_the_author_reads_the_rejection_and_its_comment_from_the_inbox(page, people):
    ada = people.make("ada", "author")
    grace = people.make("grace", "approver")
    version = plan_services.create_plan(ada, "Board review", from_data(PLAN))
    plan_services.reject(version, grace, COMMENT)

    people.login(page, ada)
    expect(page.locator("#inbox-count")).to_have_text("1")
    shoot(page, "home-with-count")
    page.click("#inbox-link")
    page.wait_for_url(re.compile(r".*/inbox/$"))
    item = page.locator(".inbox-item.unread")
    expect(item).to_have_count(1)
    expect(item.locator(".inbox-title")).to_have_text("Board review v1 was rejected by grace")
    expect(item.locator(".inbox-comment")).to_have_text(COMMENT)
    shoot(page, "inbox-rejection")

    item.locator(".inbox-title").click()
    page.wait_for_url(re.compile(rf".*/plans/{version.plan_id}/versions/1/$"))
    expect(page.locator("#inbox-count")).to_be_hidden()  # opened: read
    page.goto("/inbox/")
    expect(page.locator(".inbox-item.unread")).to_have_count(0)
    expect(page.locator(".inbox-item")).to_have_count(1)
    shoot(page, "inbox-read")


@pytest.mark.django_db(transaction=True)
def test_the_home_page_lists_what_needs_the_user(page, people, workspaces):
    ada = people.make("ada", "author", "operator")
    grace = people.make("grace", "approver")
    ben = people.make("ben", "author", "approver")
    approved = plan_services.create_plan(ada, "Board review", from_data(PLAN))
    plan_services.approve(approved, ben, "ok")
    run_services.start_run(approved, ada)
    failing = plan_services.create_plan(ada, "Risk score", from_data({
        "goal": "Score the supplier risk", "steps": FAILING_STEPS}))  # fmt: skip
    plan_services.approve(failing, ben, "ok")
    failed = run_services.start_run(failing, ada)
    drain()
    plan_services.create_plan(ben, "Release notes", from_data({
        "goal": "Draft the notes",
        "steps": [{"id": "draft", "description": "Draft", "tool": "echo", "args": {}}],
    }))  # fmt: skip

    people.login(page, grace)
    expect(page.locator("#home-summary")).to_contain_text("2 items need you")
    expect(page.locator("#home-reviews h2 .count")).to_have_text("1")
    expect(page.locator("#home-steps h2 .count")).to_have_text("1")
    expect(page.locator("#home-steps li a")).to_have_text(re.compile(r"Step publish of run #\d+"))
    shoot(page, "home-approver")
    page.locator("#home-reviews li a").click()
    page.wait_for_url(re.compile(r".*/plans/\d+/versions/1/$"))

    people.logout(page)
    people.login(page, ada)
    expect(page.locator("#home-running h2 .count")).to_have_text("1")
    expect(page.locator("#home-failed h2 .count")).to_have_text("1")
    expect(page.locator("#home-failed li a")).to_have_text(f"Run #{failed.pk}: Risk score v1")
    shoot(page, "home-author")
    page.locator("#home-failed li a").click()
    page.wait_for_url(re.compile(rf".*/runs/{failed.pk}/$"))


# --- Against a real deployment: the count is live -------------------------------------


@pytest.fixture(scope="module")
def deployment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    yield from deployed.start(tmp_path_factory, "inbox")


@pytest.fixture
def open_page(
    browser: Any, deployment: Deployment, request: pytest.FixtureRequest
) -> Iterator[Callable[[str], Any]]:
    yield from deployed.pages(browser, deployment, request)


def test_the_nav_count_changes_live_when_a_version_is_rejected(deployment, open_page):
    source = (
        "goal: Say hello\nsteps:\n  - id: hello\n    description: Say hello\n"
        "    tool: echo\n    args: {text: hello}\n"
    )
    created = deployment.api(
        "ada", "POST", "/plans", {"name": "Live inbox", "format": "yaml", "source": source}
    )
    ada = open_page("ada")
    before = int(ada.locator("#inbox-count").text_content() or "0")
    shoot(ada, "before")

    deployment.api(
        "grace", "POST", f"/plans/{created['id']}/versions/1/reject", {"comment": COMMENT}
    )

    expect(ada.locator("#inbox-count")).to_have_text(str(before + 1))  # no reload
    shoot(ada, "after")
    ada.click("#inbox-link")
    expect(ada.locator(".inbox-item").first.locator(".inbox-comment")).to_have_text(COMMENT)
