"""Approving in the browser, against a real deployment (tests/e2e/deployed.py): a step's
preview shown before the approval is asked, on the run page and in the queue; the
approval bound to the preview the person saw, refused when the step shows another one
now; a replan saved from the editor opened on a run, which the run cannot resume on
until a person other than its author approved it (the page path of the four-eyes
matrix); and a failed step's artifacts one click away. Screenshots go to
test-artifacts/e2e/<test>/.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.integration.deployment import Deployment, wait_for

from . import deployed
from .conftest import shoot
from .deployed import click_node, ensure_worker, open_run, plan_id, step_statuses
from .graph import text_value, type_text

pytestmark = pytest.mark.slow

CHANGED = "What this step will do changed since you looked: review the new preview."
BOARD_FILE = "board/q3-supplier-review.md"
BOARD_LINES = ["+# Q3 supplier review", "+", "+ACME Bearings 3.1, Northwind Steel 1.2"]
APPROVE = re.compile(r".*/api/v1/runs/\d+/steps/publish/approve$")


@pytest.fixture(scope="module")
def deployment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    yield from deployed.start(tmp_path_factory, "approvals")


@pytest.fixture
def open_page(
    browser: Any, deployment: Deployment, request: pytest.FixtureRequest
) -> Iterator[Callable[[str], Any]]:
    yield from deployed.pages(browser, deployment, request)


def waiting_board_run(deployment: Deployment) -> int:
    ensure_worker(deployment)
    run_id = deployment.start_run(plan_id(deployment, "Publish the board review"), 1)
    deployment.wait_status(run_id, "awaiting_approval")
    return run_id


def preview_of(deployment: Deployment, run_id: int, step_id: str = "publish") -> dict[str, Any]:
    step = next(s for s in deployment.run(run_id)["steps"] if s["step_id"] == step_id)
    return step["preview"]


def board_file(deployment: Deployment, run_id: int) -> Path:
    return deployment.root / "workspaces" / f"run-{run_id}" / BOARD_FILE


def approve_from_drawer(page: Any, comment: str) -> dict[str, Any]:
    """Clicks Approve in the step drawer; returns the JSON body the page posted."""
    page.fill("#approval-comment", comment)
    with page.expect_request(lambda request: bool(APPROVE.match(request.url))) as sent:
        page.click("#approve-step")
    return sent.value.post_data_json


def test_a_waiting_write_shows_its_diff_on_the_run_page_and_in_the_queue_and_the_page_approves_it(
    deployment, open_page
):
    run_id = waiting_board_run(deployment)
    preview = preview_of(deployment, run_id)
    summary = f"write {BOARD_FILE} (+3 -0)"
    assert (preview["kind"], preview["summary"]) == ("file_write", summary)

    grace = open_page("grace")
    grace.goto("/review/")
    grace.wait_for_selector("#review-page[data-state=ready]")
    item = grace.locator(f"article[data-key='step-{run_id}-publish']")
    card = item.locator(".preview-card")
    expect(card).to_have_attribute("data-hash", preview["hash"])
    expect(card.locator(".preview-summary")).to_have_text(summary)
    expect(card.locator(".line-add")).to_have_text(BOARD_LINES)
    expect(card).to_contain_text("Approving binds exactly this preview")
    expect(item.locator("form.decision")).to_have_attribute("data-preview-hash", preview["hash"])
    item.scroll_into_view_if_needed()
    shoot(grace, "1-queue")

    open_run(grace, run_id)
    person = grace.locator("#people-list [data-step=publish]")
    expect(person.locator(".preview-summary")).to_have_text(summary)
    shoot(grace, "2-needs-a-person")
    person.locator("[data-open-step=publish]").click()
    card = grace.locator("#step-drawer .preview-card")
    expect(card).to_have_attribute("data-hash", preview["hash"])
    expect(card.locator(".line-meta")).to_have_text(["--- /dev/null", f"+++ b/{BOARD_FILE}"])
    expect(card.locator(".line-add")).to_have_text(BOARD_LINES)
    # Coloured by class, never by an inline style (the CSP would refuse one anyway).
    assert card.locator("[style]").count() == 0
    added = "getComputedStyle(document.querySelector('#step-drawer .line-add')).backgroundColor"
    assert grace.evaluate(added) == "rgb(236, 253, 243)"
    shoot(grace, "3-drawer")

    body = approve_from_drawer(grace, "The review text is right")

    assert body == {"comment": "The review text is right", "preview_hash": preview["hash"]}
    expect(grace.locator("#run-page")).to_have_attribute("data-status", "succeeded")
    assert step_statuses(grace)["publish"] == "succeeded"
    assert board_file(deployment, run_id).read_text().startswith("# Q3 supplier review\n")
    shoot(grace, "4-approved-and-written")


def test_a_file_changed_after_the_page_loaded_is_refused_and_the_new_preview_is_shown(
    deployment, open_page
):
    run_id = waiting_board_run(deployment)
    first = preview_of(deployment, run_id)
    queue = open_page("grace")
    queue.goto("/review/")
    queue.wait_for_selector("#review-page[data-state=ready]")
    item = queue.locator(f"article[data-key='step-{run_id}-publish']")
    expect(item.locator(".preview-card")).to_have_attribute("data-hash", first["hash"])
    grace = open_page("grace")
    open_run(grace, run_id)
    grace.locator("#people-list [data-open-step=publish]").click()
    drawer = grace.locator("#step-drawer")
    expect(drawer.locator(".preview-card")).to_have_attribute("data-hash", first["hash"])

    # Someone writes the file after both pages showed the diff against no file at all.
    target = board_file(deployment, run_id)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("# Q3 draft by someone else\n")

    # 1. The run page approves what it showed; at commit the preview differs, so the step
    # runs nothing and comes back for approval with the new diff.
    assert approve_from_drawer(grace, "looked fine")["preview_hash"] == first["hash"]
    expect(drawer.locator(".preview-changed")).to_have_text(CHANGED)
    second = preview_of(deployment, run_id)
    assert second["hash"] != first["hash"]
    expect(drawer.locator(".preview-card")).to_have_attribute("data-hash", second["hash"])
    expect(drawer.locator(".line-del")).to_have_text(["-# Q3 draft by someone else"])
    expect(grace.locator("#people-list [data-step=publish] .preview-changed")).to_have_text(CHANGED)
    assert target.read_text() == "# Q3 draft by someone else\n"
    shoot(grace, "1-page-shows-the-new-diff")

    # 2. The queue still shows the first preview: its approval is refused (409
    # preview_changed), and the item shows the new one in place.
    item.locator("button[data-decision=approve]").click()
    expect(item.locator(".decision-error")).to_have_text(CHANGED)
    expect(item.locator(".preview-changed")).to_have_text(CHANGED)
    expect(item.locator(".preview-card")).to_have_attribute("data-hash", second["hash"])
    expect(item.locator(".line-del")).to_have_text(["-# Q3 draft by someone else"])
    expect(item.locator("form.decision")).to_have_attribute("data-preview-hash", second["hash"])
    item.scroll_into_view_if_needed()
    shoot(queue, "2-queue-refused-shows-the-new-diff")

    # 3. The run page goes offline; the file changes again and the queue approves the
    # second preview, which the commit refuses in turn: the page, still showing the
    # second, is refused (409), catches up and shows the third.
    grace.evaluate("window.forge.run.disconnect()")
    target.write_text("# Q3 draft, second try\n")
    item.locator("button[data-decision=approve]").click()
    expect(item).to_have_count(0)  # approved: it left the queue
    # Between the approval and the worker's refusal the step has no preview (None).
    third = wait_for(
        lambda: (p := preview_of(deployment, run_id)) and p["hash"] != second["hash"] and p
    )
    body = approve_from_drawer(grace, "again")
    assert body["preview_hash"] == second["hash"]
    expect(drawer.locator(".preview-card")).to_have_attribute("data-hash", third["hash"])
    expect(drawer.locator(".preview-changed")).to_have_text(CHANGED)
    expect(drawer.locator(".line-del")).to_have_text(["-# Q3 draft, second try"])
    shoot(grace, "3-page-refused-shows-the-third-diff")

    # 4. Approving what the page shows now writes the file.
    assert approve_from_drawer(grace, "checked the overwrite")["preview_hash"] == third["hash"]
    expect(grace.locator("#run-page")).to_have_attribute("data-status", "succeeded")
    assert target.read_text().startswith("# Q3 supplier review\n")
    approvals = [
        e for e in deployment.api("ada", "GET", f"/runs/{run_id}/events")
        if e["event_type"] == "step_approved"
    ]  # fmt: skip
    assert [e["facts"]["preview_hash"] for e in approvals] == [
        first["hash"],
        second["hash"],
        third["hash"],
    ]
    shoot(grace, "4-succeeded")


def test_a_replan_saved_from_the_editor_waits_for_another_person_before_the_run_resumes(
    deployment, open_page
):
    ensure_worker(deployment)
    plan = plan_id(deployment, "Score a supplier")
    run_id = deployment.start_run(plan, 1)
    deployment.wait_status(run_id, "needs_replan")
    ada = open_page("ada")
    open_run(ada, run_id)
    ada.click("#replan-edit")
    ada.wait_for_url(re.compile(rf".*/plans/{plan}/edit/\?version=1&from_run={run_id}$"))
    ada.wait_for_selector("#editor[data-state=ready]")
    banner = ada.locator("#replan-banner")
    expect(banner).to_have_attribute("data-state", "ready")
    expect(banner).to_contain_text(f"A replan of run #{run_id} from v1.")
    expect(banner).to_contain_text("A person other than its author must approve it")
    shoot(ada, "1-editor-in-replan-mode")

    # The fix, typed in the YAML view: the score is a percentage.
    ada.click("[data-action=view-yaml]")
    text = text_value(ada)
    assert "risk_score <= `10`" in text
    type_text(ada, text.replace("risk_score <= `10`", "risk_score <= `100`"))
    ada.click("[data-action=view-graph]")  # reads the text now, and compiles it
    expect(ada.locator("#dirty-flag")).to_be_visible()
    expect(ada.locator("#editor")).to_have_attribute("data-compile", "done")
    posted: list[str] = []
    ada.on("request", lambda r: posted.append(r.url) if r.method == "POST" else None)
    ada.click("#save-button")
    expect(ada.locator("#save-dialog h2")).to_have_text(f"Save a replan of run #{run_id}")
    ada.fill("#save-note", "The score is a percentage")
    with ada.expect_response(re.compile(rf".*/api/v1/runs/{run_id}/replans$")) as answer:
        ada.locator("#save-dialog button[type=submit]").click()
    saved = answer.value.json()
    number = saved["number"]
    assert (answer.value.status, saved["parent"], saved["status"]) == (
        201,
        1,
        "awaiting_approval",
    )
    expect(banner).to_have_attribute("data-state", "saved")
    expect(banner).to_contain_text(f"Saved v{number} as a replan of run #{run_id} from v1")
    expect(ada.locator("#version-label")).to_have_text(f"v{number}")
    assert not [url for url in posted if url.endswith(f"/plans/{plan}/versions")]
    shoot(ada, "2-saved-as-a-replan")

    # Back on the run: the new version is marked as not resumable yet, and resuming on
    # it is refused: no step of it runs.
    ada.click("#replan-back")
    ada.wait_for_url(re.compile(rf".*/runs/{run_id}/$"))
    ada.wait_for_selector("#run-page[data-state=ready]")
    panel = ada.locator("#replan-panel")
    option = panel.locator(f"#resume-version option[value='{number}']")
    expect(option).to_have_attribute("data-resumable", "no")
    expect(option).to_contain_text(f"✗ v{number} · needs a person · awaiting approval · by ada")
    panel.locator("#resume-version").select_option(str(number))
    expect(panel.locator("#resume-hint")).to_contain_text("a person other than its author (ada)")
    records_before = deployment.api("ada", "GET", f"/runs/{run_id}/records")
    panel.locator("#resume-button").click()
    expect(panel.locator("#resume-error")).to_contain_text("needs_person")
    shoot(ada, "3-resume-refused")
    run = deployment.run(run_id)
    assert (run["status"], run["version"]) == ("needs_replan", 1)
    assert deployment.api("ada", "GET", f"/runs/{run_id}/records") == records_before
    events = deployment.api("ada", "GET", f"/runs/{run_id}/events")
    assert [e for e in events if e["plan_version"] == number] == []

    # Grace approves it on its version page; the resume list says so and the run resumes.
    grace = open_page("grace")
    grace.goto(f"/plans/{plan}/versions/{number}/")
    grace.fill("#review-comment", "A percentage, checked")
    grace.locator("#approve-button").click()
    expect(grace.locator("#status-badge")).to_have_text("Approved")
    expect(grace.locator(".approvals li[data-decision=approved]")).to_contain_text(
        "Approved by grace"
    )
    shoot(grace, "4-grace-approved")
    panel.locator("#resume-refresh").click()
    expect(option).to_have_attribute("data-resumable", "yes")
    expect(option).to_contain_text(f"✓ v{number} · can resume · approved · by ada")
    panel.locator("#resume-version").select_option(str(number))
    panel.locator("#resume-button").click()
    expect(ada.locator("#run-page")).to_have_attribute("data-status", "succeeded")
    expect(ada.locator("#version-link")).to_have_text(f"v{number}")
    records = deployment.api("ada", "GET", f"/runs/{run_id}/records")
    assert [r["step_id"] for r in records].count("history") == 1  # kept, never run again
    assert [r["step_id"] for r in records].count("score") == 2
    shoot(ada, "5-resumed-and-succeeded")


FAILING_BUILD = """
goal: Build the supplier archive
steps:
  - id: build
    description: Build the archive bundle
    tool: shell
    args:
      argv:
        - python3
        - -c
        - "import sys; print('packing'); sys.exit('error: acme.csv is missing')"
"""


def test_a_failed_steps_build_log_is_one_click_away_in_the_drawer(deployment, open_page):
    ensure_worker(deployment)
    plan, number = deployment.approved_plan("Build the archive", FAILING_BUILD)
    run_id = deployment.start_run(plan, number)
    run = deployment.wait_status(run_id, "needs_replan")
    [build] = run["steps"]
    assert build["status"] == "failed"
    refs = {ref["name"]: ref for ref in build["artifacts"]}
    records = deployment.api("ada", "GET", f"/runs/{run_id}/records")
    [record] = [r for r in records if r["id"] == refs["stderr"]["record"]]
    stderr_id = next(a["id"] for a in record["artifacts"] if a["name"] == "stderr")

    ada = open_page("ada")
    open_run(ada, run_id)
    click_node(ada, "build")
    failed = ada.locator("#step-drawer [data-field=failed-artifacts]")
    expect(failed.locator("h3")).to_have_text("Artifacts of the failed attempt")
    expect(failed.locator(".artifact-link")).to_have_text(list(refs))
    expect(failed.locator(".artifact-link", has_text="stderr")).to_have_attribute(
        "href", re.compile(rf"/api/v1/runs/{run_id}/artifacts/{stderr_id}$")
    )
    failed.locator(".artifact", has_text="stderr").locator("summary").click()
    expect(failed.locator(".artifact", has_text="stderr").locator("pre.log")).to_contain_text(
        "error: acme.csv is missing"
    )
    shoot(ada, "1-failed-step-artifacts")
