"""The operator's side of the run page in Chromium (issue 25, items 9 to 11), against a
real deployment (uvicorn and ``forge_worker`` processes over a file SQLite database
loaded with ``forge_demo``: tests/e2e/deployed.py) whose planner is a fake
OpenAI-compatible endpoint served from this test process:

- the page follows an automatic replan live, without a reload: the planner working,
  its version proposed and whom it waits for, then the run resuming once grace approves;
- a step whose worker died says on the page (and on an operator's home) that it needs
  reconciling and who can do it;
- "Run again from here" shows what a re-run keeps and what runs again, and starts a new
  run linked to the old one.

People log in as the demo users ada (author, operator) and grace (approver, operator).
Screenshots go to test-artifacts/e2e/<test>/.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.integration.deployment import Deployment
from tests.unit.models.openai_fake import FakeOpenAI, completion, running

from . import deployed
from .conftest import shoot
from .deployed import (
    click_node,
    ensure_worker,
    matches_a_fresh_fetch,
    open_run,
    run_id_of,
    step_statuses,
    stop_workers,
)

pytestmark = pytest.mark.slow

# How long the fake planner thinks: the page is looked at while it does.
PLANNER_SECONDS = 8


@pytest.fixture(scope="module")
def planner() -> Iterator[FakeOpenAI]:
    with running() as server:
        yield server


@pytest.fixture(scope="module")
def deployment(
    tmp_path_factory: pytest.TempPathFactory, planner: FakeOpenAI
) -> Iterator[Deployment]:
    yield from deployed.start(
        tmp_path_factory,
        "operator-pages",
        FORGE_PLANNER="openai:fake-model",
        FORGE_PLANNER_BASE_URL=planner.base_url,
        FORGE_PLANNER_ATTEMPTS="1",
    )


@pytest.fixture
def open_page(
    browser: Any, deployment: Deployment, request: pytest.FixtureRequest
) -> Iterator[Callable[[str], Any]]:
    yield from deployed.pages(browser, deployment, request)


RISK = """
goal: Score the supplier's delivery risk
replan: auto
steps:
  - {id: fetch, description: Load the supplier's orders, tool: echo, args: {orders: 48}}
  - id: score
    description: Score the late-delivery risk
    tool: echo
    args: {risk: 14.6}
    depends_on: [fetch]
    done_when: {required_keys: [risk], checks: ["risk <= `10`"]}
"""
FIX = {
    "goal": "Score the supplier's delivery risk",
    "replan": "auto",
    "rationale": "The risk is a percentage: report it on the 0-10 scale the check uses.",
    "steps": [
        {"id": "fetch", "description": "Load the supplier's orders", "tool": "echo",
         "args": {"orders": 48}},
        {"id": "score", "description": "Score the late-delivery risk", "tool": "echo",
         "args": {"risk": 1.46}, "depends_on": ["fetch"],
         "done_when": {"required_keys": ["risk"], "checks": ["risk <= `10`"]}},
    ],
}  # fmt: skip


def test_the_run_page_follows_an_automatic_replan_live_without_a_reload(
    deployment, planner, open_page
):
    planner.respond(200, completion(json.dumps(FIX), tokens=900), delay_s=PLANNER_SECONDS)
    stop_workers(deployment)  # the page watches from the start
    plan, number = deployment.approved_plan("Delivery risk", RISK)
    run_id = deployment.start_run(plan, number)
    ada = open_page("ada")
    open_run(ada, run_id)
    expect(ada.locator("#live-state")).to_have_attribute("data-state", "live")
    ada.evaluate("() => { window.notReloaded = true; }")

    deployment.start_worker()

    # The contract fails, and the planner starts on a fixed version at once.
    expect(ada.locator("#run-page")).to_have_attribute(
        "data-status", "needs_replan", timeout=30_000
    )  # once the worker started
    planner_box = ada.locator("#replan-planner")
    expect(planner_box).to_have_attribute("data-phase", "working")
    expect(planner_box).to_contain_text("The planner llm:fake-model is working on a new version")
    expect(ada.locator("#attention")).to_contain_text("is working on a fixed version")
    shoot(ada, "1-planner-working")

    # It proposes v2: linked, with whom it waits for; the resume list has it, unasked.
    expect(planner_box).to_have_attribute(
        "data-phase", "proposed", timeout=PLANNER_SECONDS * 1000 + 20_000
    )
    expect(planner_box).to_contain_text(
        "proposed v2: it waits for approval by an approver other than its author, ada "
        "(barbara, grace)"  # the demo's approvers: barbara writes plans and approves too
    )
    expect(planner_box.locator("a.version")).to_have_attribute("href", f"/plans/{plan}/versions/2/")
    expect(planner_box.locator(".planner-why")).to_contain_text(
        "the policy asks a person to approve every replan"
    )
    expect(ada.locator("#resume-version option[value='2']")).to_have_count(1)
    expect(ada.locator("#resume-version")).not_to_contain_text("No version newer")
    shoot(ada, "2-proposed-waits-for-grace")

    deployment.api("grace", "POST", f"/plans/{plan}/versions/2/approve", {"comment": "ok"})

    expect(ada.locator("#run-page")).to_have_attribute("data-status", "succeeded", timeout=30_000)
    expect(ada.locator("#attention")).to_contain_text("Resumed on v2 by grace")
    expect(ada.locator("#version-link")).to_have_text("v2")
    assert ada.evaluate("window.notReloaded") is True
    kinds = [e["event_type"] for e in deployment.api("ada", "GET", f"/runs/{run_id}/events")]
    assert kinds.index("run_replan_started") < kinds.index("run_replan_proposed")
    assert kinds.index("run_replan_approved") < kinds.index("run_resumed")
    matches_a_fresh_fetch(ada, deployment, run_id)
    shoot(ada, "3-resumed-on-v2")


SLOW_SHELL = """
goal: Rebuild the supplier archive
steps:
  - {id: rebuild, description: Rebuild the archive bundle, tool: shell,
     args: {argv: [sleep, "20"]}}
  - {id: summary, description: Summarise the archive, tool: echo, args: {ok: true},
     depends_on: [rebuild]}
"""
RECONCILE = (
    "Step 'rebuild' needs reconciling by an operator: it may have performed its side effect."
)


def test_a_step_to_reconcile_says_so_and_who_acts_on_the_page_and_at_home(deployment, open_page):
    stop_workers(deployment)  # the page watches before the step starts
    plan, number = deployment.approved_plan("Rebuild the archive", SLOW_SHELL)
    run_id = deployment.start_run(plan, number)
    grace = open_page("grace")
    open_run(grace, run_id)
    deployment.start_worker()
    expect(grace.locator("#timeline .bar.running")).to_have_count(1, timeout=30_000)

    # The worker dies mid-step; the next one's reaper leaves the step to a person.
    stop_workers(deployment)
    deployment.start_worker()

    expect(grace.locator("#run-page")).to_have_attribute(
        "data-status", "awaiting_approval", timeout=30_000
    )
    expect(grace.locator("#attention")).to_have_attribute("data-kind", "reconcile")
    expect(grace.locator("#attention")).to_contain_text(f"Waiting for a person: {RECONCILE}")
    expect(grace.locator("#run-status")).to_have_text("Awaiting approval")
    expect(grace.locator("#people-list [data-kind=reconcile]")).to_contain_text(
        "Needs reconciling by an operator"
    )
    assert step_statuses(grace) == {"rebuild": "needs_reconciliation", "summary": "pending"}
    matches_a_fresh_fetch(grace, deployment, run_id)
    shoot(grace, "1-run-page-says-who-acts")

    grace.goto("/")
    section = grace.locator("#home-reconcile")
    expect(section).to_have_attribute("data-count", "1")
    expect(section.locator("a", has_text=f"Step rebuild of run #{run_id}")).to_have_attribute(
        "href", f"/runs/{run_id}/#step-rebuild"
    )
    shoot(grace, "2-home-steps-to-reconcile")

    deployment.api(
        "grace", "POST", f"/runs/{run_id}/steps/rebuild/reconcile",
        {"status": "succeeded", "output": {"exit_code": 0}},
    )  # fmt: skip
    deployment.wait_status(run_id, "succeeded")
    grace.reload()
    expect(grace.locator("#home-reconcile")).to_have_attribute("data-count", "0")


BOARD = """
goal: Publish the supplier scorecard
requires_approval_before: [file_write]
steps:
  - {id: fetch, description: Load the supplier's orders, tool: echo, args: {orders: 48}}
  - {id: score, description: Score the delivery risk, tool: echo, args: {risk: 3},
     depends_on: [fetch]}
  - {id: log, description: Log the inputs for the audit file, tool: echo,
     args: {logged: true}, depends_on: [fetch]}
  - {id: publish, description: Write the scorecard, tool: file_write,
     args: {path: scorecard.md, content: "risk 3"}, depends_on: [score, log]}
"""


def test_run_again_from_here_starts_a_linked_run_that_keeps_what_is_upstream(deployment, open_page):
    ensure_worker(deployment)
    plan, number = deployment.approved_plan("Supplier scorecard", BOARD)
    old = deployment.start_run(plan, number)
    deployment.wait_status(old, "awaiting_approval")
    deployment.api("grace", "POST", f"/runs/{old}/steps/publish/approve", {"comment": "ok"})
    deployment.wait_status(old, "succeeded")
    ada = open_page("ada")
    open_run(ada, old)

    click_node(ada, "score")
    ada.locator("#rerun-from").click()
    dialog = ada.locator("#rerun-dialog")
    expect(dialog).to_be_visible()
    expect(dialog.locator("[data-group=rerun]")).to_contain_text("Runs again (2)")
    ada.select_option("#rerun-add", "log")
    expect(dialog.locator("[data-group=rerun]")).to_contain_text("Runs again (3)")
    expect(dialog.locator("[data-group=kept] li")).to_have_text(["fetch"])
    expect(dialog.locator("[data-group=approval]")).to_contain_text(
        "publish: plan requires approval before scope 'file_write'"
    )
    shoot(ada, "1-what-runs-again")

    dialog.locator("#rerun-start").click()

    ada.wait_for_url(re.compile(rf".*/runs/(?!{old}/)\d+/$"))
    ada.wait_for_selector("#run-page[data-state=ready]")
    new = run_id_of(ada)
    expect(ada.locator("#rerun-of")).to_contain_text(f"Re-run of #{old} from score, log")
    expect(ada.locator("#run-page")).to_have_attribute(
        "data-status", "awaiting_approval", timeout=30_000
    )
    expect(ada.locator("#attention")).to_contain_text(
        "Step 'publish' waits for approval by an approver who did not write this version"
    )
    assert step_statuses(ada)["fetch"] == "succeeded"
    shoot(ada, "2-rerun-waits-for-approval-again")

    deployment.api("grace", "POST", f"/runs/{new}/steps/publish/approve", {"comment": "again"})
    expect(ada.locator("#run-page")).to_have_attribute("data-status", "succeeded", timeout=30_000)
    click_node(ada, "fetch")
    expect(ada.locator("#step-drawer .drawer-meta")).to_contain_text(
        f"from run #{old}: its recorded output, not run again"
    )
    matches_a_fresh_fetch(ada, deployment, new)
    records = deployment.api("ada", "GET", f"/runs/{new}/records")
    assert {record["step_id"] for record in records} == {"score", "log", "publish"}
    ada.goto(f"/runs/{old}/")
    expect(ada.locator("#reruns")).to_contain_text(f"Re-run as #{new}")
    shoot(ada, "3-old-run-links-to-its-rerun")


MILESTONES = """
goal: Report on the supplier's deliveries
steps:
  - {id: gather, description: Gather the delivery records, tool: echo, args: {rows: 48}}
  - {id: write, description: Write the delivery report, tool: echo, args: {done: true},
     depends_on: [gather]}
milestones:
  - {id: facts, title: Gather the facts, steps: [gather], review: true}
  - {id: report, title: Write it up, steps: [write]}
"""


def test_a_milestone_wait_is_described_as_a_milestone_with_a_link_to_its_review(
    deployment, open_page
):
    ensure_worker(deployment)
    plan, number = deployment.approved_plan("Delivery report", MILESTONES)
    run_id = deployment.start_run(plan, number)
    deployment.wait_status(run_id, "awaiting_approval")
    ada = open_page("ada")
    open_run(ada, run_id)

    banner = ada.locator("#attention")
    expect(banner).to_contain_text(
        "Milestone 'facts' waits for review by an approver who did not write this version."
    )
    expect(banner.locator("[data-milestone=facts]")).to_contain_text(
        "Waits for milestone review: Gather the facts"
    )
    link = f"/review/#milestone-{run_id}-facts"
    expect(banner.locator("[data-milestone=facts] a")).to_have_attribute("href", link)
    item = ada.locator("#people-list [data-kind=review]")
    expect(item).to_contain_text("Gather the facts")
    expect(item.locator("a")).to_have_attribute("href", link)
    matches_a_fresh_fetch(ada, deployment, run_id)
    shoot(ada, "1-waits-for-milestone-review")

    grace = open_page("grace")
    grace.goto(link)
    expect(grace.locator(f"#milestone-{run_id}-facts")).to_be_visible()
    shoot(grace, "2-the-milestone-in-the-queue")
