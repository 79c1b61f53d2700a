"""New plan from a goal in Chromium (issue 25, item 5), on a real deployment (uvicorn and
a ``forge_worker`` process, tests/e2e/deployed.py) whose ``FORGE_PLANNER`` is the
project's own OpenAI-compatible test server: while the planner works the page shows the
elapsed time, "attempt 2 of 3: the last answer had a cycle" and a Cancel that stops it;
what it proposes opens in the editor as ada's draft under the planner's banner, out of
grace's queue until ada submits it; a planner that gives no plan leaves the form as
typed. The last test uses the in-process live server with make run's demo planner script,
whose goals the page lists. Screenshots go to test-artifacts/e2e/<test>/.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.integration.deployment import REPO, Deployment, wait_for
from tests.unit.models.openai_fake import FakeOpenAI, completion, running

from . import deployed
from .conftest import shoot

pytestmark = pytest.mark.slow

GOAL = "Score the late deliveries of Northwind Steel"
FETCH = {
    "id": "fetch",
    "description": "Fetch the supplier's delivery counts",
    "tool": "echo",
    "args": {"orders": 40, "late": 2},
    "done_when": {"required_keys": ["orders", "late"]},
}
SCORE = {
    "id": "score",
    "description": "Compute the share of late deliveries",
    "tool": "echo",
    "args": {"late_share": 0.05},
    "depends_on": ["fetch"],
    "done_when": {"required_keys": ["late_share"], "checks": ["late_share <= `1`"]},
}
REPORT = {"id": "report", "description": "Write the risk summary for the buyer", "tool": "echo",
          "args": {"summary": "Northwind Steel: 2 of 40 late"}, "depends_on": ["score"],
          "done_when": {"required_keys": ["summary"]}}  # fmt: skip
GOOD = {
    "goal": GOAL,
    "steps": [FETCH, SCORE, REPORT],
    "rationale": "Fetch the counts, score them, then report: every step only reads.",
}
# fetch waits for score, which waits for fetch: a cycle, and only that
CYCLIC = {"goal": GOAL, "steps": [{**FETCH, "depends_on": ["score"]}, SCORE, REPORT]}  # fmt: skip


def answer(document: dict[str, Any], tokens: int) -> dict[str, Any]:
    return completion(json.dumps(document), tokens=tokens, model="fake-planner")


@pytest.fixture(scope="module")
def planner() -> Iterator[FakeOpenAI]:
    with running() as server:
        yield server


@pytest.fixture(scope="module")
def deployment(
    tmp_path_factory: pytest.TempPathFactory, planner: FakeOpenAI
) -> Iterator[Deployment]:
    with pytest.MonkeyPatch.context() as env:
        env.setenv("FORGE_PLANNER", "openai:fake-planner")
        env.setenv("FORGE_PLANNER_BASE_URL", planner.base_url)
        env.setenv("FORGE_PLANNER_ATTEMPTS", "3")
        yield from deployed.start(tmp_path_factory, "generate-progress")


@pytest.fixture
def open_page(
    browser: Any, deployment: Deployment, request: pytest.FixtureRequest
) -> Iterator[Callable[[str], Any]]:
    yield from deployed.pages(browser, deployment, request)


def ask(page: Any, goal: str, context: str = "") -> None:
    page.goto("/plans/generate/")
    page.wait_for_selector("#generate-plan[data-state=ready]")
    page.fill("#goal", goal)
    page.fill("#context", context)
    page.click("#generate-button")


def queued(page: Any) -> Any:
    page.goto("/review/")
    page.wait_for_selector("#review-page[data-state=ready]")
    return page.locator("article.review-item", has_text=GOAL)


def test_the_page_shows_each_attempt_and_the_draft_waits_for_its_author_to_submit_it(
    deployment, open_page, planner
):
    deployed.ensure_worker(deployment)
    planner.respond(200, answer(CYCLIC, 400))
    planner.respond(200, answer(GOOD, 600), delay_s=4)  # attempt 2 takes its time

    ada = open_page("ada")
    ask(ada, GOAL, "Orders and late deliveries come from the supplier's record.")

    line = ada.locator("#progress-line")
    expect(line).to_contain_text("Attempt 2 of 3: the last answer had a cycle", timeout=30_000)
    expect(ada.locator("#progress-attempts li")).to_have_text(
        [re.compile(r"Attempt 1: sent back: \[cycle\]")]
    )
    expect(ada.locator("#progress-elapsed")).to_have_text(re.compile(r"^\d+ s$"))
    expect(ada.locator("#cancel-generation")).to_be_enabled()
    shoot(ada, "1-attempt-2-of-3")

    # The planner's answer opens in the editor as ada's draft, under the planner's banner.
    ada.wait_for_url(re.compile(r".*/plans/\d+/edit/\?version=1$"), timeout=30_000)
    ada.wait_for_selector("#editor[data-state=ready]")
    banner = ada.locator("#planner-banner")
    expect(banner).to_contain_text("Made by the planner llm:fake-planner for ada")
    expect(banner).to_contain_text("1000 tokens")
    expect(banner).to_contain_text(GOOD["rationale"])
    expect(banner).to_contain_text("2 attempts")
    expect(ada.locator("#planner-draft-note")).to_be_visible()
    expect(ada.locator("#status-badge")).to_have_text("Draft")
    expect(ada.locator("#approve-button")).to_be_disabled()
    submit = ada.locator("#submit-review-button")
    expect(submit).to_be_visible()
    expect(submit).to_be_enabled()
    shoot(ada, "2-draft-in-the-editor")

    # Not in grace's queue until ada submits it.
    grace = open_page("grace")
    expect(queued(grace)).to_have_count(0)
    submit.click()
    expect(ada.locator("#status-badge")).to_have_text("Awaiting approval")
    expect(ada.locator("#planner-draft-note")).to_be_hidden()
    expect(submit).to_be_hidden()
    shoot(ada, "3-submitted")
    expect(queued(grace)).to_have_count(1)
    shoot(grace, "4-in-the-queue")


def test_cancel_stops_the_planner_keeps_what_was_typed_and_saves_nothing(
    deployment, open_page, planner
):
    deployed.ensure_worker(deployment)
    asked_before = len(planner.requests)
    plans_before = deployment.api("ada", "GET", "/plans")["count"]
    # Attempt 1's answer comes late and would go back to the planner: Cancel comes first.
    planner.respond(200, answer(CYCLIC, 300), delay_s=5)
    planner.respond(200, answer(GOOD, 300))

    ada = open_page("ada")
    ask(ada, "Plan the supplier review offsite", "Twelve people, one day")
    expect(ada.locator("#progress-line")).to_contain_text("Attempt 1 of 3", timeout=30_000)
    shoot(ada, "1-working")
    ada.click("#cancel-generation")

    expect(ada.locator("#progress-line")).to_contain_text("Cancelled")
    expect(ada.locator("#progress-line")).to_contain_text("no plan was saved")
    expect(ada.locator("#cancel-generation")).to_be_hidden()
    expect(ada.locator("#goal")).to_have_value("Plan the supplier review offsite")
    expect(ada.locator("#context")).to_have_value("Twelve people, one day")
    expect(ada.locator("#generate-button")).to_be_enabled()
    shoot(ada, "2-cancelled")

    # The late answer is discarded: the planner is not asked again and no plan is saved.
    proposal = int(ada.locator("#generate-progress").get_attribute("data-proposal") or 0)
    stopped = wait_for(
        lambda: (
            (p := deployment.api("ada", "GET", f"/plans/proposals/{proposal}"))["attempts"] and p
        ),
        timeout=30,
    )
    assert (stopped["status"], stopped["version"]) == ("cancelled", None)
    assert [a["code"] for a in stopped["attempts"]] == ["does_not_compile"]
    assert len(planner.requests) == asked_before + 1
    assert deployment.api("ada", "GET", "/plans")["count"] == plans_before


def test_a_planner_that_gives_no_plan_leaves_the_form_with_each_attempt_and_the_code(
    deployment, open_page, planner
):
    deployed.ensure_worker(deployment)
    planner.requests.clear()
    planner.answers.clear()  # what an earlier test queued and did not use
    planner.respond(200, answer(CYCLIC, 200))
    planner.respond(503, {"error": {"message": "overloaded"}})

    ada = open_page("ada")
    ask(ada, "Score the late deliveries of Contoso", "Orders come from the ERP")

    failure = ada.locator("#generate-error")
    expect(failure).to_be_visible(timeout=30_000)
    expect(failure.locator("code")).to_have_text("model_http_error")
    expect(failure.locator("li")).to_have_text([re.compile(r"Attempt 1: \[cycle\]")])
    expect(ada.locator("#generate-plan")).to_have_attribute("data-state", "failed")
    expect(ada.locator("#goal")).to_have_value("Score the late deliveries of Contoso")
    expect(ada.locator("#context")).to_have_value("Orders come from the ERP")
    expect(ada.locator("#generate-button")).to_be_enabled()
    shoot(ada, "1-no-plan")


def test_the_demo_planner_lists_the_goals_it_knows_and_one_click_fills_the_goal(
    page, people, settings
):
    # The live server of tests/e2e/conftest.py, in this process: make run's planner.
    settings.FORGE_PLANNER = f"scripted:{REPO / 'examples' / 'demo' / 'planner.yaml'}"
    people.login(page, people.make("ada", "author"))

    page.goto("/plans/generate/")
    page.wait_for_selector("#generate-plan[data-state=ready]")
    goals = page.locator("#planner-examples button[data-goal]")
    expect(goals).to_have_count(3)
    expect(goals.first).to_have_text("Draft the release notes for version 2.5 from the changelog")
    goals.nth(1).click()

    expect(page.locator("#goal")).to_have_value("Score the delivery risk of supplier ACME Bearings")
    shoot(page, "1-demo-goals")
