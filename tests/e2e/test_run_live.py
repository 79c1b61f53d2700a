"""The live run page in Chromium, against a real deployment: uvicorn (pytest-django's
live server speaks WSGI and has no websockets) and ``manage.py forge_worker`` processes
over a file SQLite database loaded with ``forge_demo`` (tests/e2e/deployed.py).

People log in through the login form as the demo users: ada (author, operator) and
grace (approver, operator). One deployment serves the whole module; the tests stop and
start workers when they need a run to wait for the page. Screenshots go to
test-artifacts/e2e/<test>/.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.integration.deployment import Deployment

from . import deployed
from .conftest import shoot
from .deployed import (
    click_node,
    ensure_worker,
    matches_a_fresh_fetch,
    open_run,
    plan_id,
    run_id_of,
    step_statuses,
    stop_workers,
)

pytestmark = pytest.mark.slow

XSS = "<img src=x onerror=alert(1)>"


@pytest.fixture(scope="module")
def deployment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    # No worker yet: the first test starts one once its page watches the run.
    yield from deployed.start(tmp_path_factory, "run-pages")


@pytest.fixture
def open_page(
    browser: Any, deployment: Deployment, request: pytest.FixtureRequest
) -> Iterator[Callable[[str], Any]]:
    yield from deployed.pages(browser, deployment, request)


# --- Tests ------------------------------------------------------------------------------


def test_a_run_started_from_the_run_list_turns_green_live_without_a_reload(deployment, open_page):
    stop_workers(deployment)  # the run waits for a worker while the page watches
    ada = open_page("ada")
    ada.goto("/runs/")
    ada.select_option("#start-version", label="Release notes · v1")
    shoot(ada, "1-run-list")
    ada.click("#start-run button[type=submit]")
    ada.wait_for_url(re.compile(r".*/runs/\d+/$"))
    ada.wait_for_selector("#run-page[data-state=ready]")
    expect(ada.locator("#live-state")).to_have_attribute("data-state", "live")
    run_id = run_id_of(ada)
    first_seq = ada.evaluate("window.forge.run.lastSeq()")
    assert "succeeded" not in step_statuses(ada).values()
    ada.evaluate("() => { window.notReloaded = true; }")
    shoot(ada, "2-waiting-for-a-worker")

    deployment.start_worker()

    expect(ada.locator("#run-page")).to_have_attribute("data-status", "succeeded", timeout=30_000)
    assert step_statuses(ada) == {
        "changelog": "succeeded",
        "count": "succeeded",
        "read": "succeeded",
        "publish": "succeeded",
    }
    assert ada.evaluate("window.forge.run.cy.nodes('.s-succeeded').length") == 4
    assert ada.evaluate("window.notReloaded") is True
    last_seq = deployment.run(run_id)["last_seq"]
    assert ada.evaluate("window.forge.run.applied()") == last_seq - first_seq > 0
    matches_a_fresh_fetch(ada, deployment, run_id)
    expect(ada.locator("#live-state")).to_have_attribute("data-state", "stopped")
    expect(ada.locator("#budget [data-gauge=steps] .gauge-value")).to_have_text("4 of 10")
    expect(ada.locator("#timeline .bar.s-succeeded")).to_have_count(4)
    shoot(ada, "3-succeeded")

    # The drawer: arguments from the version's document, output, contract, logs.
    click_node(ada, "count")
    drawer = ada.locator("#step-drawer")
    expect(drawer.locator("[data-field=args]")).to_contain_text('"wc"')
    expect(drawer.locator("[data-field=output]")).to_contain_text("CHANGELOG.txt")
    expect(drawer.locator(".verdict")).to_have_attribute("data-valid", "true")
    expect(drawer.locator(".artifact-link", has_text="stdout")).to_have_attribute(
        "href", re.compile(r"/api/v1/runs/\d+/artifacts/\d+$")
    )
    drawer.locator(".artifact", has_text="stdout").locator("summary").click()
    expect(drawer.locator(".artifact", has_text="stdout").locator("pre.log")).to_contain_text(
        "CHANGELOG.txt"
    )
    shoot(ada, "4-drawer")


def test_a_page_that_lost_its_connection_catches_up_without_gaps_or_repeats(deployment, open_page):
    ensure_worker(deployment)
    run_id = deployment.start_run(plan_id(deployment, "Publish the board review"), 1)
    deployment.wait_status(run_id, "awaiting_approval")
    ada = open_page("ada")
    open_run(ada, run_id)
    expect(ada.locator("#live-state")).to_have_attribute("data-state", "live")
    first_seq = ada.evaluate("window.forge.run.lastSeq()")
    ada.evaluate("window.forge.run.disconnect()")

    # While the page is offline, grace approves and the run finishes.
    deployment.api("grace", "POST", f"/runs/{run_id}/steps/publish/approve", {"comment": "ok"})
    deployment.wait_status(run_id, "succeeded")
    assert ada.evaluate("window.forge.run.lastSeq()") == first_seq
    expect(ada.locator("#live-state")).to_have_attribute("data-state", "offline")
    shoot(ada, "1-offline")

    ada.evaluate("window.forge.run.reconnect()")
    expect(ada.locator("#run-page")).to_have_attribute("data-status", "succeeded")
    last_seq = deployment.run(run_id)["last_seq"]
    assert ada.evaluate("window.forge.run.applied()") == last_seq - first_seq > 0
    assert ada.evaluate("window.forge.run.connections()") == 2
    matches_a_fresh_fetch(ada, deployment, run_id)
    shoot(ada, "2-caught-up")


def test_an_approver_approves_a_waiting_step_and_both_pages_see_it_finish(deployment, open_page):
    ensure_worker(deployment)
    board = plan_id(deployment, "Publish the board review")
    ada = open_page("ada")
    # The address the plan pages' Run button opens.
    ada.goto(f"/runs/new/?plan={board}&version=1")
    expect(ada.locator("#start-version")).to_have_value(f"{board}:1")
    ada.click("#start-run button[type=submit]")
    ada.wait_for_url(re.compile(r".*/runs/\d+/$"))
    expect(ada.locator("#run-page")).to_have_attribute("data-status", "awaiting_approval")
    expect(ada.locator("#attention")).to_contain_text(
        "Step 'publish' waits for approval by an approver who did not write this version"
    )
    assert step_statuses(ada)["publish"] == "awaiting_approval"
    # ada holds no approver role: the drawer explains instead of offering buttons.
    ada.locator("#people-list [data-open-step=publish]").click()
    expect(ada.locator("#step-drawer .drawer-action.waiting")).to_contain_text(
        "An approver who did not write this version"
    )
    expect(ada.locator("#approve-step")).to_have_count(0)
    shoot(ada, "1-ada-waits")

    grace = open_page("grace")
    open_run(grace, run_id_of(ada))
    grace.locator("#people-list [data-open-step=publish]").click()
    grace.fill("#approval-comment", "Scores checked against the supplier file")
    shoot(grace, "2-grace-reviews")
    grace.click("#approve-step")

    for page in (grace, ada):
        expect(page.locator("#run-page")).to_have_attribute("data-status", "succeeded")
        assert set(step_statuses(page).values()) == {"succeeded"}
    expect(grace.locator("#step-drawer .drawer-meta")).to_contain_text("Approved by")
    expect(grace.locator("#step-drawer .drawer-meta")).to_contain_text("grace")
    assert ada.evaluate("window.forge.run.state().steps.publish.approvedBy") == "grace"
    shoot(grace, "3-grace-sees-it-finish")
    shoot(ada, "3-ada-sees-it-finish")


def test_a_failed_contract_shows_the_replan_and_the_run_resumes_on_a_fixed_version(
    deployment, open_page
):
    ensure_worker(deployment)
    plan = plan_id(deployment, "Score a supplier")
    ada = open_page("ada")
    ada.goto("/runs/")
    ada.select_option("#start-version", label="Score a supplier · v1")
    ada.click("#start-run button[type=submit]")
    ada.wait_for_url(re.compile(r".*/runs/\d+/$"))
    run_id = run_id_of(ada)

    expect(ada.locator("#run-page")).to_have_attribute("data-status", "needs_replan")
    panel = ada.locator("#replan-panel")
    expect(panel).to_be_visible()
    expect(panel.locator("#replan-failure")).to_contain_text("score")
    # The failed check says what it saw: nobody compares the output by hand.
    expect(panel.locator("#replan-failure")).to_contain_text(
        "check 1 failed: risk_score <= `10` with risk_score = 14.6"
    )
    expect(panel.locator("[data-set=reset] .step-chip")).to_have_text(["report", "score"])
    expect(panel.locator("[data-set=preserved] .step-chip")).to_have_text(["history"])
    classes = ada.evaluate(
        "(ids) => ids.map(id => window.forge.run.cy.getElementById(id).classes())",
        ["history", "score", "report"],
    )
    assert "in-preserved" in classes[0]
    assert {"in-reset", "failed-step", "s-invalid"} <= set(classes[1])
    assert "in-reset" in classes[2]
    expect(panel.locator("#replan-edit")).to_have_attribute(
        "href", f"/plans/{plan}/edit/?version=1&from_run={run_id}"
    )
    shoot(ada, "1-needs-replan")
    # The drawer shows the check with its value, and the attempt in the step's words.
    click_node(ada, "score")
    drawer = ada.locator("#step-drawer")
    expect(drawer.locator("dd.check-failed")).to_have_text(
        "✗ risk_score <= `10` with risk_score = 14.6"
    )
    expect(drawer.locator(".record-head").first).to_contain_text(
        "invalid: the tool ran, its output broke the contract"
    )
    drawer.locator("[data-close]").click()

    # Two new versions, saved while the page is open: one fixes the contract, one raises
    # the replan cap (plan drift: refused until approved). The fix is approved before the
    # drift is submitted: a version still waiting would be superseded by it.
    source = (Path(__file__).parents[2] / "examples/demo/score-supplier.yaml").read_text()
    drift = source.replace("max_replans: 2", "max_replans: 3")
    fixed = source.replace("risk_score <= `10`", "risk_score <= `100`")
    assert drift != source and fixed != source
    deployment.api(
        "ada",
        "POST",
        f"/plans/{plan}/versions",
        {"format": "yaml", "source": fixed, "note": "the score is a percentage"},
    )
    # A person other than its author approves the fix (grace); the drift waits for one.
    deployment.api("grace", "POST", f"/plans/{plan}/versions/2/approve", {"comment": "fine"})
    deployment.api(
        "ada", "POST", f"/plans/{plan}/versions",
        {"format": "yaml", "source": drift, "note": "more replans"},
    )  # fmt: skip
    panel.locator("#resume-refresh").click()
    expect(panel.locator("#resume-version option")).to_have_count(2)

    panel.locator("#resume-version").select_option("3")
    panel.locator("#resume-button").click()
    expect(panel.locator("#resume-error")).to_contain_text("drift_needs_approval")
    expect(panel.locator("#resume-error")).to_contain_text("max_replans raised from 2 to 3")
    shoot(ada, "2-drift-refused")

    panel.locator("#resume-version").select_option("2")
    panel.locator("#resume-button").click()
    expect(ada.locator("#run-page")).to_have_attribute("data-status", "succeeded")
    expect(ada.locator("#version-link")).to_have_text("v2")
    assert set(step_statuses(ada).values()) == {"succeeded"}
    expect(ada.locator("#attention")).to_contain_text("keeping the results of history")
    matches_a_fresh_fetch(ada, deployment, run_id)
    # The preserved step ran once: one execution record, never re-executed.
    records = deployment.api("ada", "GET", f"/runs/{run_id}/records")
    assert [r["step_id"] for r in records].count("history") == 1
    assert [r["step_id"] for r in records].count("score") == 2
    shoot(ada, "3-resumed-and-succeeded")


def test_markup_in_a_step_output_is_shown_as_text(deployment, open_page):
    ensure_worker(deployment)
    source = f"""
goal: Quote a supplier's note {XSS}
steps:
  - id: quote
    description: "Quote <b>the</b> note {XSS}"
    depends_on: []
    tool: echo
    args: {{note: "{XSS}", html: "<script>alert(2)</script>"}}
"""
    plan, number = deployment.approved_plan(f"Quote {XSS}", source)
    run_id = deployment.start_run(plan, number)
    deployment.wait_status(run_id, "succeeded")

    ada = open_page("ada")
    ada.goto("/runs/")
    expect(ada.locator(f"tr[data-run='{run_id}']")).to_contain_text(f"Quote {XSS}")
    shoot(ada, "1-run-list")
    open_run(ada, run_id)
    click_node(ada, "quote")
    drawer = ada.locator("#step-drawer")
    expect(drawer.locator("[data-field=output]")).to_contain_text(XSS)
    expect(drawer.locator("[data-field=output]")).to_contain_text("<script>alert(2)</script>")
    expect(drawer.locator(".step-description")).to_have_text(f"Quote <b>the</b> note {XSS}")
    assert ada.locator("#step-drawer img, #step-drawer script, #step-drawer b").count() == 0
    assert ada.locator("main img").count() == 0
    shoot(ada, "2-drawer-shows-text")


# Long enough that a loaded machine's page still sees it running: the worker is killed
# mid-step, so the test never waits for it (4 s was once over before the page looked).
SLOW_SHELL = """
goal: Rebuild the supplier archive
steps:
  - {id: rebuild, description: Rebuild the archive bundle, tool: shell,
     args: {argv: [sleep, "60"]}}
  - {id: summary, description: Summarise the archive, tool: echo, args: {ok: true},
     depends_on: [rebuild]}
"""


def test_an_operator_reconciles_a_step_interrupted_by_a_dead_worker(deployment, open_page):
    ensure_worker(deployment)
    plan, number = deployment.approved_plan("Rebuild the archive", SLOW_SHELL)
    run_id = deployment.start_run(plan, number)
    ada = open_page("ada")
    open_run(ada, run_id)
    expect(ada.locator("#timeline .bar.running")).to_have_count(1)
    assert step_statuses(ada)["rebuild"] == "running"
    shoot(ada, "1-running")

    # The worker dies mid-step; a shell command may have had its effect, so the new
    # worker's reaper leaves it for a person instead of running it again.
    stop_workers(deployment)
    deployment.start_worker()
    expect(ada.locator("#run-page .people-panel")).to_be_visible(timeout=30_000)
    assert step_statuses(ada) == {"rebuild": "needs_reconciliation", "summary": "pending"}
    ada.locator("#people-list [data-open-step=rebuild]").click()
    ada.fill("#reconcile-output", "{not json")
    ada.locator(".reconcile-form button[type=submit]").click()
    expect(ada.locator(".reconcile-form .error")).to_contain_text("not JSON")
    ada.fill("#reconcile-output", '{"exit_code": 0, "note": "the bundle is there"}')
    ada.fill("#reconcile-comment", "the bundle is on the release server, dated today")
    shoot(ada, "2-reconcile")
    ada.locator(".reconcile-form button[type=submit]").click()

    expect(ada.locator("#run-page")).to_have_attribute("data-status", "succeeded")
    expect(ada.locator("#step-drawer [data-field=output]")).to_contain_text("the bundle is there")
    # How the operator knew is kept with the decision.
    trail = deployment.api("ada", "GET", "/audit?action=run.step_reconciled")["items"]
    assert [event["payload"] for event in trail] == [
        {"step": "rebuild", "status": "succeeded",
         "comment": "the bundle is on the release server, dated today"}
    ]  # fmt: skip
    matches_a_fresh_fetch(ada, deployment, run_id)
    shoot(ada, "3-reconciled")


def test_an_operator_cancels_a_waiting_run(deployment, open_page):
    ensure_worker(deployment)
    run_id = deployment.start_run(plan_id(deployment, "Publish the board review"), 1)
    deployment.wait_status(run_id, "awaiting_approval")
    ada = open_page("ada")
    open_run(ada, run_id)
    ada.locator("#cancel-button").click()
    expect(ada.locator("#cancel-button")).to_have_text("Really cancel?")
    ada.locator("#cancel-button").click()

    expect(ada.locator("#run-page")).to_have_attribute("data-status", "cancelled")
    expect(ada.locator("#cancel-button")).to_be_hidden()
    assert step_statuses(ada)["publish"] == "cancelled"
    matches_a_fresh_fetch(ada, deployment, run_id)
    shoot(ada, "cancelled")
