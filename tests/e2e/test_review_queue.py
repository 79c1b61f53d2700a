"""The approval queue in Chromium: a reviewer finds what waits for her from the topbar,
reads each item (the diff against the last approved version, risk, scopes, budget
estimate, drift; a paused step's exact arguments and the hash its approval binds),
decides with a comment, and sees the item leave; a decision someone else made first is
refused and the refusal shown. Screenshots go to test-artifacts/e2e/<test>/."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from forge.plan import from_data
from plans import services as plan_services
from plans.models import VersionStatus
from runs import services
from runs.models import Run, StepApproval
from tests.web.runs_helpers import drain

from .conftest import shoot

pytestmark = pytest.mark.django_db(transaction=True)

BOARD = {
    "goal": "Publish the quarterly supplier review to the board folder",
    "risk_level": "medium",
    "requires_approval_before": ["file_write"],
    "budget": {"max_steps": 5, "max_tokens": 1000, "max_cost": 1.0},
    "steps": [
        {
            "id": "collect",
            "description": "Collect the quarter's supplier scores",
            "tool": "echo",
            "args": {"scores": {"ACME Bearings": 3.1, "Northwind Steel": 1.2}},
            "estimate": {"tokens": 200, "cost": 0.1},
        },
        {
            "id": "publish",
            "description": "Write the review into the board folder",
            "tool": "file_write",
            "args": {"path": "board/q3-review.md", "content": "# Q3 supplier review\n"},
            "depends_on": ["collect"],
            "estimate": {"tokens": 500, "cost": 0.5},
        },
    ],
}
NOTES = {
    "goal": "Draft the release notes <script>alert(1)</script>",
    "steps": [{"id": "draft", "description": "Draft the notes", "tool": "echo", "args": {}}],
}
DIFF_CLASSES = """async (key) => {
  const graph = window.forge.review.graphs.get(key);
  await graph.ready;
  const diff = ["added", "removed", "changed"];
  return graph.cy.nodes().map((n) => [n.id(), n.classes().filter((c) => diff.includes(c))]);
}"""


def shoot_page(page, name):
    """The whole page, not only the viewport: these pages are read top to bottom."""
    page.screenshot(path=str(page.artifacts / f"{name}.png"), full_page=True)


@pytest.fixture(autouse=True)
def workspaces(settings, tmp_path):
    settings.FORGE_WORKSPACES = str(tmp_path / "workspaces")


def board_v2():
    steps = [dict(step) for step in BOARD["steps"]]
    steps[1] = {**steps[1], "args": {"path": "board/q3-review.md", "content": "# Q3 review\n"}}
    steps.append(
        {
            "id": "announce",
            "description": "Tell the board the review is in its folder",
            "tool": "echo",
            "args": {"to": "board"},
            "depends_on": ["publish"],
            "estimate": {"tokens": 600, "cost": 0.6},
        }
    )
    return from_data({**BOARD, "budget": {**BOARD["budget"], "max_cost": 2.0}, "steps": steps})


def item(page, key):
    return page.locator(f"article[data-key='{key}']")


def test_a_reviewer_decides_versions_and_steps_from_the_queue(page, people):
    ada = people.make("ada", "author", "operator")
    grace = people.make("grace", "approver")
    ben = people.make("ben", "author", "approver")
    v1 = plan_services.create_plan(ada, "Board review", from_data(BOARD))
    plan_services.approve(v1, ben, "ok")
    first, second = services.start_run(v1, ada), services.start_run(v1, ada)
    drain()
    assert Run.objects.get(pk=first.pk).status == "awaiting_approval"
    v2 = plan_services.create_version(
        v1.plan, ada, board_v2(), note="Shorter heading; announce it to the board"
    )
    notes = plan_services.create_plan(ben, "Release notes", from_data(NOTES))
    people.login(page, grace)

    # The topbar says four things wait for her.
    expect(page.locator("#review-count")).to_have_text("4")
    page.click("#review-link")
    page.wait_for_selector("#review-page[data-state=ready]")
    expect(page.locator("article.review-item")).to_have_count(4)  # 2 versions, 2 steps
    shoot(page, "1-queue")
    shoot_page(page, "1-queue-whole")

    # Board review v2 against v1, the last approved version.
    board = item(page, f"version-{v2.pk}")
    expect(board.locator("h4").first).to_contain_text("Changes since v1")
    expect(board.locator(".diff-changes li[data-kind=added]").first).to_contain_text("announce")
    expect(
        board.locator(".diff-changes li[data-kind=changed]", has_text="publish")
    ).to_contain_text('args.content: "# Q3 supplier review\\n" → "# Q3 review\\n"')
    expect(board.locator(".diff-changes")).to_contain_text("budget.max_cost: 1.0 → 2.0")
    expect(board.locator(".risk")).to_have_text("medium risk")
    expect(board.locator("code.scope")).to_have_text("file_write")
    expect(board.locator(".pauses")).to_contain_text(
        "publish will pause: plan requires approval before scope 'file_write'"
    )
    expect(board.locator("tr[data-dimension=steps]")).to_contain_text("3")
    expect(board.locator("tr[data-dimension=tokens]")).to_contain_text("1300")
    expect(board.locator("tr[data-dimension=tokens]")).to_contain_text("over budget")
    expect(board.locator("tr[data-dimension=cost]")).not_to_have_class(re.compile("over"))
    expect(board.locator(".drift")).to_contain_text("Budget max_cost loosened from 1.0 to 2.0")
    expect(board.locator(".warnings")).to_contain_text("budget_exceeded_statically")

    # Its change on the graph, drawn when asked for.
    board.get_by_role("button", name="Show on the graph").click()
    classes = dict(page.evaluate(DIFF_CLASSES, f"version-{v2.pk}"))
    assert classes == {"collect": [], "publish": ["changed"], "announce": ["added"]}
    board.scroll_into_view_if_needed()
    shoot(page, "2-diff-graph")

    # A first version has nothing to compare with; its text is shown as text.
    release = item(page, f"version-{notes.pk}")
    expect(release.locator("h4").first).to_have_text("First version to review")
    expect(release.locator(".goal")).to_have_text(
        "Draft the release notes <script>alert(1)</script>"
    )

    # A paused step: its exact arguments and the hash its approval binds.
    step = item(page, f"step-{first.pk}-publish")
    expect(step.locator("pre.args")).to_contain_text('"path": "board/q3-review.md"')
    expect(step.locator(".reasons")).to_contain_text(
        "plan requires approval before scope 'file_write'"
    )
    expect(step.locator(".meta")).to_contain_text("= SHA-256 of the arguments shown")

    # Ben approves the first run's step while the page is open: Grace's approval is
    # refused, and the refusal is shown on the item.
    services.approve_step(Run.objects.get(pk=first.pk), "publish", ben, "done already")
    step.locator("textarea").fill("Path checked")
    step.get_by_role("button", name="Approve this call").click()
    expect(step.locator(".decision-error")).to_be_visible()
    expect(step.locator(".decision-error")).to_contain_text("transition_refused")
    shoot(page, "3-refused")

    # She approves the second run's step: it leaves the queue and the run goes on.
    other = item(page, f"step-{second.pk}-publish")
    other.locator("textarea").fill("The board folder is the right place")
    other.get_by_role("button", name="Approve this call").click()
    expect(other).to_have_count(0)
    expect(page.locator("#review-count")).to_have_text("3")
    approval = StepApproval.objects.get(run_id=second.pk)
    assert (approval.reviewer.username, approval.decision, approval.comment) == (
        "grace",
        "approved",
        "The board folder is the right place",
    )
    drain()
    assert Run.objects.get(pk=second.pk).status == "succeeded"

    # She rejects the release notes with a comment and approves the board review.
    release.locator("textarea").fill("Name the changelog file")
    release.get_by_role("button", name="Reject").click()
    expect(release).to_have_count(0)
    board.locator("textarea").fill("Heading and announcement are fine; budget raise agreed")
    board.get_by_role("button", name="Approve v2").click()
    expect(board).to_have_count(0)
    expect(page.locator("#versions .section-empty")).to_be_visible()
    expect(page.locator("[data-count-for=version]").first).to_have_text("0")
    notes.refresh_from_db()
    v2.refresh_from_db()
    assert notes.status == VersionStatus.REJECTED
    assert [(a.reviewer.username, a.comment) for a in notes.approvals.all()] == [
        ("grace", "Name the changelog file")
    ]
    assert v2.status == VersionStatus.APPROVED

    # After a refresh only what still waits is left: nothing.
    page.click("#refresh")
    page.wait_for_selector("#review-page[data-state=ready]")
    expect(page.locator("#review-empty")).to_be_visible()
    expect(page.locator("#review-count")).to_have_count(0)
    shoot(page, "4-empty")


def test_an_author_who_approves_is_never_offered_her_own_work(page, people):
    ada = people.make("ada", "author", "approver", "operator")
    grace = people.make("grace", "approver")
    v1 = plan_services.create_plan(ada, "Board review", from_data(BOARD))
    plan_services.approve(v1, grace, "ok")
    services.start_run(v1, ada)
    drain()
    plan_services.create_version(v1.plan, ada, board_v2(), note="announce it")
    people.login(page, ada)

    expect(page.locator("#review-link")).to_have_text("Review")
    page.goto("/review/")
    page.wait_for_selector("#review-page[data-state=ready]")
    expect(page.locator("article.review-item")).to_have_count(0)
    expect(page.locator("#review-empty")).to_be_visible()
    expect(page.locator("#own-versions")).to_have_text(
        "1 version you wrote waits for another approver."
    )
    expect(page.locator("#own-steps")).to_have_text(
        "1 step of versions you wrote waits for another approver."
    )
    shoot(page, "own-work")
