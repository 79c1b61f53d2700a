"""Issue 11's story in Chromium, on a real deployment (uvicorn and a ``forge_worker``
process, tests/e2e/deployed.py) whose ``FORGE_PLANNER`` is the project's own
OpenAI-compatible test server (tests/unit/models/openai_fake.py): ada asks for a plan
from a goal and lands in the editor with the planner's proposal, her draft, which she
submits; grace approves it; ada runs it; a step breaks its contract, the worker asks the
planner for a replan, which waits in grace's review queue with its diff; grace approves
it and the run finishes. Screenshots go to test-artifacts/e2e/<test>/.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.integration.deployment import Deployment, wait_for
from tests.unit.models.openai_fake import FakeOpenAI, running

from . import deployed
from .conftest import shoot

pytestmark = pytest.mark.slow

GOAL = "Score the late deliveries of ACME Bearings"
FETCH = {
    "id": "fetch",
    "description": "Fetch the supplier's delivery counts",
    "tool": "echo",
    "args": {"orders": 48, "late": 7},
    "done_when": {"required_keys": ["orders", "late"]},
}
SCORE = {
    "id": "score",
    "description": "Compute the share of late deliveries",
    "tool": "echo",
    "args": {"late_share": 14.6},
    "depends_on": ["fetch"],
    "done_when": {"required_keys": ["late_share"], "checks": ["late_share <= `1`"]},
}
REPORT = {
    "id": "report",
    "description": "Write the risk summary for the buyer",
    "tool": "echo",
    "args": {"summary": "ACME Bearings: 7 of 48 late"},
    "depends_on": ["score"],
}
V1 = {
    "goal": GOAL,
    "replan": "auto",
    "max_replans": 2,
    "steps": [FETCH, SCORE, REPORT],
    "rationale": "Fetch the counts, score them, then report: every step only reads.",
}
V2 = {**V1, "steps": [FETCH, {**SCORE, "args": {"late_share": 0.146}}, REPORT],
      "rationale": "The share was a percentage: score it as a fraction, 7/48."}  # fmt: skip


@pytest.fixture(scope="module")
def planner() -> Iterator[FakeOpenAI]:
    with running() as server:
        server.reply(json.dumps(V1), tokens=1500, model="fake-planner")
        server.reply(json.dumps(V2), tokens=900, model="fake-planner")
        yield server


@pytest.fixture(scope="module")
def deployment(
    tmp_path_factory: pytest.TempPathFactory, planner: FakeOpenAI
) -> Iterator[Deployment]:
    with pytest.MonkeyPatch.context() as env:
        env.setenv("FORGE_PLANNER", "openai:fake-planner")
        env.setenv("FORGE_PLANNER_BASE_URL", planner.base_url)
        env.delenv("FORGE_POLICY", raising=False)  # every replan waits for a person
        yield from deployed.start(tmp_path_factory, "planner-story")


@pytest.fixture
def open_page(
    browser: Any, deployment: Deployment, request: pytest.FixtureRequest
) -> Iterator[Callable[[str], Any]]:
    yield from deployed.pages(browser, deployment, request)


def test_a_plan_from_a_goal_is_approved_runs_replans_on_the_worker_and_finishes(
    deployment, open_page, planner
):
    deployed.ensure_worker(deployment)

    # ada asks the planner for a plan from her goal.
    ada = open_page("ada")
    ada.goto("/plans/")
    ada.click("#generate-link")
    ada.wait_for_selector("#generate-plan[data-state=ready]")
    ada.fill("#goal", GOAL)
    ada.fill("#context", "Orders and late deliveries come from the supplier's record.")
    ada.fill("#constraints", "Read only: nothing leaves Forge.")
    shoot(ada, "1-goal")
    ada.click("#generate-button")

    # She lands in the editor on version 1, made by the planner for her.
    ada.wait_for_url(re.compile(r".*/plans/\d+/edit/\?version=1$"))
    ada.wait_for_selector("#editor[data-state=ready]")
    banner = ada.locator("#planner-banner")
    expect(banner).to_contain_text("Made by the planner llm:fake-planner for ada")
    expect(banner).to_contain_text("1500 tokens")
    expect(banner).to_contain_text(V1["rationale"])
    # It is her draft: she reads it, then submits it for review.
    expect(ada.locator("#status-badge")).to_have_text("Draft")
    expect(ada.locator("#approve-button")).to_be_disabled()  # her own version
    shoot(ada, "2-editor")
    ada.click("#submit-review-button")
    expect(ada.locator("#status-badge")).to_have_text("Awaiting approval")
    plan = int(re.search(r"/plans/(\d+)/", ada.url).group(1))  # type: ignore[union-attr]
    assert "Context: Orders and late deliveries" in planner.messages(0)[1]["content"]

    # grace, another person, reviews and approves it.
    grace = open_page("grace")
    grace.goto(f"/plans/{plan}/versions/1/")
    grace.wait_for_selector("#graph canvas")
    expect(grace.locator("#planner-card")).to_contain_text("for ada")
    grace.fill("#review-comment", "Reads only; the check is strict, fine.")
    grace.get_by_role("button", name="Approve").click()
    expect(grace.locator("#status-badge")).to_have_text("Approved")
    shoot(grace, "3-approved")

    # ada runs it; `score` breaks its contract and the worker asks the planner.
    ada.goto("/runs/")
    ada.select_option("#start-version", label=f"{GOAL} · v1")
    ada.click("#start-run button[type=submit]")
    ada.wait_for_url(re.compile(r".*/runs/\d+/$"))
    run_id = deployed.run_id_of(ada)
    wait_for(lambda: len(planner.requests) == 2, timeout=60)
    waiting = deployment.wait_status(run_id, "needs_replan")
    assert waiting["version"] == 1
    asked = planner.messages(1)[1]["content"]
    assert "Failed step: score" in asked and "<tool-data>" in asked
    deployed.open_run(ada, run_id)
    expect(ada.locator("#run-page")).to_have_attribute("data-state", "ready")
    shoot(ada, "4-needs-replan")

    # The replan waits in grace's queue with its diff; she approves it there.
    grace.goto("/review/")
    grace.wait_for_selector("#review-page[data-state=ready]")
    replan = grace.locator("article.review-item", has_text="v2")
    expect(replan.locator(".diff-changes")).to_contain_text("args.late_share: 14.6 → 0.146")
    expect(replan.locator(".replan-callout")).to_contain_text("resumes on this version by itself")
    shoot(grace, "5-queue")
    replan.locator("textarea").fill("Scoring as a fraction is right.")
    replan.get_by_role("button", name="Approve v2").click()
    expect(replan).to_have_count(0)

    # The run resumes on v2 by itself and finishes.
    done = deployment.wait_status(run_id, "succeeded", "failed", timeout=60)
    assert (done["status"], done["version"]) == ("succeeded", 2)
    deployed.open_run(ada, run_id)
    expect(ada.locator("#run-page")).to_have_attribute("data-state", "ready")
    shoot(ada, "6-finished")

    # The replan view says what the planner was told and answered.
    ada.goto(f"/runs/{run_id}/replans/")
    ada.wait_for_selector("#replan-page[data-state=ready]")
    box = ada.locator("#replan-1 .planner-box")
    expect(box).to_contain_text("Made by the planner llm:fake-planner for ada")
    expect(box).to_contain_text("900 tokens")
    expect(box).to_contain_text(V2["rationale"])
    box.locator("summary", has_text="What the planner was told and answered").click()
    expect(box.locator("pre.transcript").first).to_contain_text("Failed step: score")
    shoot(ada, "7-replan-view")
