"""The replan view in Chromium: an operator and an auditor follow a run through its
replans from a fresh database. The run is made through the services with the worker
loop drained in-process (tests/web/runs_helpers.py): it breaks a contract, is resumed
on a fixed version that drifts (so an approver approves it first), fails again on a
step the fix added, and finishes on a third version. Screenshots go to
test-artifacts/e2e/<test>/."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from forge.plan import from_data
from plans import services as plan_services
from runs import services
from runs.models import Run
from tests.web.runs_helpers import approved_version, drain

from .conftest import shoot
from .graph import NODE_POINT

pytestmark = pytest.mark.django_db(transaction=True)

GOAL = "Score the supplier's delivery risk from its order history"
FETCH = {
    "id": "fetch",
    "description": "Fetch the supplier's order records",
    "tool": "echo",
    "args": {"supplier": "ACME Bearings", "orders": 48, "late": 7},
    "done_when": {"required_keys": ["orders", "late"]},
}
HISTORY = {
    "id": "history",
    "description": "Summarise twelve months of deliveries",
    "tool": "echo",
    "args": {"late_share": 0.146},
    "depends_on": ["fetch"],
}
LOG = {
    "id": "log",
    "description": "Log the inputs for the audit file",
    "tool": "echo",
    "args": {"logged": True},
    "depends_on": ["fetch"],
}
SCORE = {
    "id": "score",
    "description": "Compute the late-delivery risk score",
    "tool": "echo",
    "args": {"risk_score": 14.6},
    "depends_on": ["history"],
    "done_when": {"required_keys": ["risk_score"], "checks": ["risk_score <= `10`"]},
}
REPORT = {
    "id": "report",
    "description": "Write the risk summary for the buyer",
    "tool": "echo",
    "args": {"summary": "ACME Bearings: risk 14.6"},
    "depends_on": ["score", "log"],
}
FATES = "[...window.forge.replan.fates].map(([id, info]) => [id, info.fate])"
GROUP = "window.forge.replan.cy.getElementById('replan:reset').children().map(n => n.id()).sort()"


def shoot_page(page, name):
    """The whole page, not only the viewport: these pages are read top to bottom."""
    page.screenshot(path=str(page.artifacts / f"{name}.png"), full_page=True)


@pytest.fixture(autouse=True)
def workspaces(settings, tmp_path):
    settings.FORGE_WORKSPACES = str(tmp_path / "workspaces")


def document(steps, **fields):
    return from_data({"goal": GOAL, "budget": {"max_cost": 5.0}, **fields, "steps": steps})


def replanned_run(ada, grace, operator):
    """v1 breaks its contract at `score`; v2 (a scripted planner's fix, loosening the
    budget: drift, approved by grace) adds a `review` step that fails; v3 (ada in the
    editor) drops it (drift again: the deliverable depended on it; grace approves) and
    the run succeeds."""
    v1 = approved_version(
        ada, grace, [FETCH, HISTORY, LOG, SCORE, REPORT], goal=GOAL, budget={"max_cost": 5.0}
    )
    run = services.start_run(v1, operator)
    drain()
    run.refresh_from_db()
    assert run.status == "needs_replan"

    fixed_score = {
        **SCORE,
        "done_when": {"required_keys": ["risk_score"], "checks": ["risk_score <= `100`"]},
    }
    review = {
        "id": "review",
        "description": "Ask the buyer's checker to confirm the score",
        "tool": "fail",
        "args": {"message": "the checker service is down"},
        "depends_on": ["score"],
    }
    report = {**REPORT, "depends_on": ["review", "log"]}
    v2 = plan_services.create_version(
        v1.plan,
        ada,
        document([FETCH, HISTORY, LOG, fixed_score, review, report], budget={"max_cost": 8.0}),
        planner="scripted:risk-fixer",
        replan_reason="The score is a percentage: the check assumed a 0-10 scale",
        note="check the score as a percentage; add a second pair of eyes",
    )
    plan_services.approve(v2, grace, "budget raise is fine for one supplier")
    services.resume_run(run, v2, operator)
    drain()
    run.refresh_from_db()
    assert run.status == "needs_replan"

    v3 = plan_services.create_version(
        v1.plan,
        ada,
        document(
            [FETCH, HISTORY, LOG, fixed_score, {**REPORT, "depends_on": ["score", "log"]}],
            budget={"max_cost": 8.0},
        ),  # fmt: skip
        note="drop the checker step until its service is back",
        replan_reason="review failed: the checker service is down",
    )
    plan_services.approve(v3, grace, "fine without the checker for now")  # drift: approve
    services.resume_run(run, v3, operator)
    drain()
    run.refresh_from_db()
    assert run.status == "succeeded"
    return run


def click_node(page, node_id):
    point = page.evaluate(NODE_POINT, node_id)
    page.mouse.click(point["x"], point["y"])


def wait_drawn(page, index):
    page.wait_for_selector(f"#replan-page[data-state=ready][data-selected='{index}']")


def test_an_operator_follows_a_run_through_two_replans(page, people):
    ada = people.make("ada", "author", "operator")
    grace = people.make("grace", "approver")
    olga = people.make("olga", "operator")
    run = replanned_run(ada, grace, olga)
    people.login(page, olga)

    # From the run page, the one link to its replans.
    page.goto(f"/runs/{run.pk}/")
    expect(page.locator("#replans-link")).to_have_text("Replans (2)")
    page.click("#replans-link")
    page.wait_for_url(re.compile(rf".*/runs/{run.pk}/replans/$"))
    wait_drawn(page, 2)

    # The lineage: v1, the failure that made v2, v2, the failure that made v3, v3.
    lineage = page.locator("#lineage > li")
    expect(lineage).to_have_count(5)
    expect(lineage.nth(0)).to_contain_text("v1")
    expect(lineage.nth(0)).to_contain_text("the run started here")
    expect(lineage.nth(1)).to_contain_text("score broke its contract")
    expect(lineage.nth(1)).to_contain_text("check 1 failed")
    expect(lineage.nth(1)).to_contain_text("resumed by olga on v2")
    expect(lineage.nth(2)).to_contain_text("scripted:risk-fixer")
    expect(lineage.nth(3)).to_contain_text("review failed")
    expect(lineage.nth(3)).to_contain_text("the checker service is down")
    expect(lineage.nth(4)).to_contain_text("v3")
    expect(page.locator("#lineage button[data-replan='2']")).to_have_attribute(
        "aria-pressed", "true"
    )

    # Replan 2 (the latest) first: review failed in v2 and was removed in v3.
    fates = dict(page.evaluate(FATES))
    assert fates == {
        "fetch": "kept",
        "history": "kept",
        "log": "kept",
        "score": "kept",
        "review": "failed",
        "report": "changed",
    }
    assert page.evaluate(GROUP) == ["report", "review"]
    panel = page.locator("#replan-2")
    expect(panel).to_be_visible()
    expect(panel.locator(".drift-box")).to_have_attribute("data-drift", "1")
    expect(panel.locator(".drift-box")).to_contain_text(
        "Step 'review', which the deliverable depended on, was removed"
    )
    expect(panel.locator(".failure-box")).to_contain_text("the checker service is down")
    shoot(page, "1-replan-2")

    # Replan 1: the contract verdict, the drift, what was kept, added, changed.
    page.click("#lineage button[data-replan='1']")
    wait_drawn(page, 1)
    assert re.search(r"\?replan=1$", page.url)
    fates = dict(page.evaluate(FATES))
    # `log` had not run when `score` failed (the worker took `score` first): it runs again.
    assert fates == {
        "fetch": "kept",
        "history": "kept",
        "log": "rerun",
        "score": "failed",
        "review": "added",
        "report": "changed",
    }
    assert page.evaluate(GROUP) == ["report", "score"]
    classes = page.evaluate("window.forge.replan.cy.getElementById('score').classes()")
    assert "r-failed" in classes
    panel = page.locator("#replan-1")
    expect(panel.locator(".failure-box")).to_contain_text("check 1 failed")
    expect(panel.locator(".verdict-list")).to_contain_text("risk_score <= `10`")
    expect(panel.locator(".drift-box.drifted")).to_contain_text(
        "Budget max_cost loosened from 5.0 to 8.0"
    )
    expect(panel).to_contain_text("approved by grace")
    expect(panel).to_contain_text("The score is a percentage: the check assumed a 0-10 scale")
    expect(panel.locator(".kept-list > li")).to_have_count(2)
    expect(page.locator("#replan-2")).to_be_hidden()
    # Each step's tag says its fate and which version's step is shown: the failed step
    # failed in v1, though the list shows it as v2 wrote it.
    marks = "#step-table .step-entry[data-step='{}'] .step-mark"
    expect(page.locator(marks.format("score"))).to_have_text("failed in v1 · as written in v2")
    expect(page.locator(marks.format("fetch"))).to_have_text("kept its result · as written in v2")
    shoot(page, "2-replan-1")
    shoot_page(page, "2-replan-1-whole")

    # A kept step's result, from the graph.
    click_node(page, "history")
    detail = page.locator("#step-detail")
    expect(detail).to_be_visible()
    expect(detail.locator(".fate")).to_have_text("kept its result")
    expect(detail.locator("pre.json").first).to_contain_text('"late_share": 0.146')
    shoot(page, "3-kept-step")

    # The failed step, from its chip in the panel: its changed check.
    panel.locator(".failure-box button[data-focus=score]").click()
    expect(detail.locator("h2")).to_have_text("score")
    expect(detail.locator(".fate")).to_have_text("failed")
    expect(detail).to_contain_text("done_when")
    expect(detail).to_contain_text("risk_score <= `100`")
    # What changed in it, down to the check, as the review card and diff page say it.
    expect(detail.locator(".diff-changes li")).to_have_text(
        ["done_when.checks[0]: risk_score <= `10` → risk_score <= `100`"]
    )

    # A deep link opens the replan it names.
    page.goto(f"/runs/{run.pk}/replans/?replan=1")
    wait_drawn(page, 1)
    expect(page.locator("#replan-1")).to_be_visible()


def test_a_run_waiting_for_a_replan_shows_what_it_would_keep(page, people):
    ada = people.make("ada", "author", "operator")
    grace = people.make("grace", "approver")
    v1 = approved_version(ada, grace, [FETCH, HISTORY, LOG, SCORE, REPORT], goal=GOAL)
    run = services.start_run(v1, ada)
    drain()
    plan_services.create_version(
        v1.plan, ada, document([FETCH, HISTORY, LOG, SCORE, REPORT]), note="draft of a fix",
        submit=False,
    )  # fmt: skip
    people.login(page, grace)

    page.goto(f"/runs/{run.pk}/replans/")
    wait_drawn(page, 1)
    expect(page.locator("#lineage > li")).to_have_count(3)
    expect(page.locator("#lineage > li.waiting")).to_contain_text("1 newer version saved")
    fates = dict(page.evaluate(FATES))
    assert fates == {
        "fetch": "kept",
        "history": "kept",
        "log": "waiting",  # had not run yet: outside the reset, it simply waits
        "score": "failed",
        "report": "rerun",
    }
    panel = page.locator("#replan-1")
    expect(panel).to_contain_text("Would keep their results")
    expect(panel.locator(".versions-newer")).to_contain_text("v2")
    expect(panel.locator(".versions-newer")).to_contain_text("Draft")
    assert Run.objects.get(pk=run.pk).status == "needs_replan"
    shoot(page, "waiting")
    shoot_page(page, "waiting-whole")


def test_the_replan_model_gives_each_step_one_fate(page, people):
    people.login(page, people.make("vera", "viewer"))
    result = page.evaluate(
        """async () => {
      const m = await import("/static/forge/js/replan/model.js");
      const oldDoc = {goal: "g", steps: [
        {id: "a", tool: "echo"}, {id: "b", tool: "echo", depends_on: ["a"]},
        {id: "c", tool: "echo", depends_on: ["b"]}, {id: "d", tool: "echo", depends_on: ["a"]}]};
      const newDoc = {goal: "g", steps: [
        {id: "a", tool: "echo"}, {id: "b", tool: "noop", depends_on: ["a"]},
        {id: "e", tool: "echo", depends_on: ["b"]}, {id: "d", tool: "echo", depends_on: ["a"]}]};
      const replan = {
        from: 1, to: 2, failure: {step: "b", verb: "failed"}, reset: ["b", "c"],
        candidates: ["a", "d"],
        resume: {preserved: ["a", "d"]},
        diff: {added_steps: ["e"], removed_steps: ["c"],
               changed_steps: [
                 {id: "b", changes: [{field: "tool", before: "echo", after: "noop"}]}],
               added_edges: [["b", "e"]], removed_edges: [["b", "c"]], plan_changes: []},
      };
      const {nodes, edges, fates} = m.replanElements(replan, oldDoc, newDoc, {});
      const waiting = {...replan, to: null, resume: null};
      const pending = m.stepFates(waiting, oldDoc, null, {"1": {d: "running"}});
      return {
        fates: [...fates].map(([id, info]) => [id, info.fate, info.line]),
        parents: nodes.filter((n) => n.data.parent).map((n) => n.data.id).sort(),
        group: nodes[0].data.id,
        edges: edges.map((e) => [e.data.id, e.classes]),
        pending: [...pending].map(([id, info]) => [id, info.fate, info.line]),
      };
    }"""
    )
    assert result["fates"] == [
        ["a", "kept", "✓ kept its result"],
        ["b", "failed", "✕ failed in v1 · tool changed"],
        ["c", "removed", "− removed in v2"],
        ["d", "kept", "✓ kept its result"],
        ["e", "added", "+ added in v2"],
    ]
    assert result["parents"] == ["b", "c"]
    assert result["group"] == "replan:reset"
    assert sorted(result["edges"]) == [
        ["a>b", "dependency"],
        ["a>d", "dependency"],
        ["b>c", "dependency r-edge-removed"],
        ["b>e", "dependency r-edge-added"],
    ]
    assert result["pending"] == [
        ["a", "kept", "✓ keeps its result if unchanged"],
        ["b", "failed", "✕ failed in v1"],
        ["c", "rerun", "↻ starts over"],
        ["d", "kept", "✓ keeps its result if unchanged"],
    ]
