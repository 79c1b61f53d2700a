"""Issue 25, item 2: stale versions stay approvable. A version awaiting approval is
``superseded`` when a newer version of its plan is submitted: it leaves the queue, the
counts and home, can be neither approved nor run (409 ``superseded``), its page links to
the newer one, and the newer version's card compares it with the last version an
approver saw."""

from __future__ import annotations

import re
from unittest import mock

import pytest

from audit.models import AuditEvent
from forge.plan import from_data
from plans import services as plan_services
from plans.models import PlanVersion
from reviews import queue as review
from runs import services as run_services
from runs.models import Run

from .runs_helpers import FAILING_STEPS, FIXED_STEPS, approved_version, drain

pytestmark = pytest.mark.django_db(transaction=True)

STEPS = [
    {"id": "collect", "description": "Collect the scores", "tool": "echo", "args": {"n": 1}},
    {
        "id": "publish",
        "description": "Write the review",
        "tool": "file_write",
        "args": {"path": "review.md", "content": "ok"},
        "depends_on": ["collect"],
    },
]


@pytest.fixture(autouse=True)
def workspaces(settings, tmp_path):
    settings.FORGE_WORKSPACES = str(tmp_path / "workspaces")


def document(n=1, *, extra=(), **fields):
    steps = [dict(STEPS[0], args={"n": n}), STEPS[1], *extra]
    return from_data({"goal": "Publish the review", "requires_approval_before": ["file_write"],
                      **fields, "steps": steps})  # fmt: skip


def three_versions(author, *, submit_v2=True):
    """v1 submitted, v2 (submitted or a draft), v3 submitted: the issue's planner story."""
    v1 = plan_services.create_plan(author, "Board review", document(1))
    v2 = plan_services.create_version(v1.plan, author, document(2), submit=submit_v2)
    v3 = plan_services.create_version(v1.plan, author, document(3), note="third")
    return [PlanVersion.objects.get(pk=v.pk) for v in (v1, v2, v3)]


def _post(client, path, body=None):
    return client.post(f"/api/v1{path}", body or {}, content_type="application/json")


# --- The rule ------------------------------------------------------------------------------


def test_submitting_a_newer_version_supersedes_the_ones_awaiting_approval(author):
    v1, v2, v3 = three_versions(author)

    assert (v1.status, v2.status, v3.status) == ("superseded", "superseded", "awaiting_approval")
    assert (v1.superseded_by_id, v2.superseded_by_id) == (v2.pk, v3.pk)
    events = AuditEvent.objects.filter(action="plan_version.superseded").order_by("seq")
    assert [(e.payload["version"], e.payload["superseded_by"]) for e in events] == [(1, 2), (2, 3)]
    assert {e.actor for e in events} == {"author"}
    assert events[0].payload["previous_status"] == "awaiting_approval"


def test_drafts_versions_with_errors_and_decided_versions_are_never_superseded(author, approver):
    approved = plan_services.create_plan(author, "Board review", document(1))
    plan_services.approve(approved, approver, "ok")
    sent_back = plan_services.create_version(approved.plan, author, document(2))
    plan_services.request_changes(sent_back, approver, "smaller")
    draft = plan_services.create_version(approved.plan, author, document(3), submit=False)
    waiting = plan_services.create_version(approved.plan, author, document(4))
    broken = plan_services.create_version(
        approved.plan, author, from_data({"goal": "x", "steps": [{"id": "a", "tool": "nope"}]})
    )
    latest = plan_services.create_version(approved.plan, author, document(5), submit=False)

    statuses = dict(PlanVersion.objects.filter(plan=approved.plan).values_list("number", "status"))
    assert statuses == {1: "approved", 2: "changes_requested", 3: "draft",
                        4: "awaiting_approval", 5: "has_errors", 6: "draft"}  # fmt: skip

    plan_services.submit_version(latest, author)  # a draft submitted later supersedes too

    assert PlanVersion.objects.get(pk=waiting.pk).status == "superseded"
    assert PlanVersion.objects.get(pk=draft.pk).status == "draft"
    assert PlanVersion.objects.get(pk=broken.pk).status == "has_errors"


def test_an_older_draft_cannot_be_submitted_over_a_newer_submitted_version(author, api_client):
    v1, v2, v3 = three_versions(author, submit_v2=False)
    assert (v1.status, v2.status) == ("superseded", "draft")

    answer = _post(api_client(author), f"/versions/{v2.pk}/submit")

    assert answer.status_code == 409
    assert answer.json()["code"] == "superseded"
    assert answer.json()["superseded_by"] == 3
    assert PlanVersion.objects.get(pk=v2.pk).status == "draft"  # nothing lost


def test_superseding_is_recorded_in_the_transaction_that_submits(author):
    v1 = plan_services.create_plan(author, "Board review", document(1))
    real = plan_services.record

    def failing(actor, action, *args, **kwargs):
        if action == "plan_version.superseded":
            raise RuntimeError("the audit trail is down")
        return real(actor, action, *args, **kwargs)

    with mock.patch.object(plan_services, "record", failing), pytest.raises(RuntimeError):
        plan_services.create_version(v1.plan, author, document(2))

    assert list(PlanVersion.objects.values_list("number", "status")) == [(1, "awaiting_approval")]


# --- Neither approved nor run: 409 superseded -------------------------------------------------


@pytest.mark.parametrize("decision", ["approve", "reject", "request-changes"])
def test_a_superseded_version_cannot_be_decided(decision, author, approver, api_client):
    v1, _, _ = three_versions(author)

    answer = _post(api_client(approver), f"/plans/{v1.plan_id}/versions/1/{decision}")

    assert answer.status_code == 409, answer.json()
    assert answer.json()["code"] == "superseded"
    assert answer.json()["superseded_by"] == 2  # which v3 superseded in turn
    assert "superseded by v2" in answer.json()["detail"]
    assert PlanVersion.objects.get(pk=v1.pk).status == "superseded"
    assert not v1.approvals.exists()


def test_a_superseded_version_cannot_start_a_run(author, operator, api_client):
    v1, _, _ = three_versions(author)

    answer = _post(api_client(operator), "/runs", {"plan_id": v1.plan_id, "version": 1})

    assert answer.status_code == 409
    assert answer.json()["code"] == "superseded"
    assert Run.objects.count() == 0


def test_a_superseded_replan_cannot_resume_a_run(author, approver, operator, api_client):
    v1 = approved_version(author, approver, FAILING_STEPS)
    run = run_services.start_run(v1, operator)
    drain()
    run.refresh_from_db()
    assert run.status == "needs_replan"
    data = {"goal": "Prepare the supplier risk report", "steps": FIXED_STEPS}
    v2 = plan_services.create_version(v1.plan, author, from_data(data), note="fix")
    plan_services.create_version(v1.plan, author, from_data(data), note="fix again")

    answer = _post(api_client(operator), f"/runs/{run.pk}/resume", {"version": v2.number})

    assert answer.status_code == 409
    assert answer.json()["code"] == "superseded"
    run.refresh_from_db()
    assert (run.status, run.version_id) == ("needs_replan", v1.pk)


def test_the_api_shows_the_status_and_the_newer_version(author, viewer, api_client):
    v1, _, _ = three_versions(author)
    client = api_client(viewer)

    one = client.get(f"/api/v1/plans/{v1.plan_id}/versions/1").json()
    listed = client.get(f"/api/v1/plans/{v1.plan_id}/versions").json()["items"]

    assert (one["status"], one["superseded_by"]) == ("superseded", 2)
    assert [(v["number"], v["status"], v["superseded_by"]) for v in listed] == [
        (3, "awaiting_approval", None), (2, "superseded", 3), (1, "superseded", 2)
    ]  # fmt: skip


# --- Queues, counts, home ---------------------------------------------------------------------


def test_the_queue_counts_and_home_offer_only_the_newest_version(
    author, approver, make_user, client
):
    v1, v2, v3 = three_versions(author)
    other = make_user("other", "approver")

    queue = review.queue_for(approver)

    assert [item["number"] for item in queue.versions] == [3]
    assert review.waiting_count(approver) == review.waiting_count(other) == 1
    client.force_login(approver)
    home = client.get("/api/v1/me/home").json()
    [reviews] = [s for s in home["sections"] if s["name"] == "reviews"]
    assert (reviews["count"], [i["title"] for i in reviews["items"]]) == (1, ["Board review v3"])


# --- The card's diff base: the last version an approver saw ----------------------------------


def _card(user, version):
    [item] = [i for i in review.queue_for(user).versions if i["number"] == version.number]
    return item


def test_the_card_compares_with_the_newest_version_submitted_when_nobody_decided(
    author, approver, client
):
    _, _, v3 = three_versions(author)

    item = _card(approver, v3)

    assert (item["baseline"], item["baseline_why"]) == (2, "superseded before anyone decided")
    assert [c["id"] for c in item["diff"]["changed_steps"]] == ["collect"]
    client.force_login(approver)
    body = client.get("/review/").content.decode()
    assert "First version to review" not in body
    assert "Changes since v2" in body and "superseded before anyone decided" in body


def test_a_draft_is_no_base_the_last_submitted_version_is(author, approver):
    _, _, v3 = three_versions(author, submit_v2=False)

    assert _card(approver, v3)["baseline"] == 1


def test_the_card_compares_with_the_last_version_a_person_decided_on(author, approver):
    v1 = plan_services.create_plan(author, "Board review", document(1))
    plan_services.approve(v1, approver, "ok")
    v2 = plan_services.create_version(v1.plan, author, document(2), note="bigger")
    plan_services.request_changes(v2, approver, "too big")
    plan_services.create_version(v1.plan, author, document(3), submit=False)
    v4 = plan_services.create_version(
        v1.plan, author, document(4, requires_approval_before=[]), note="smaller"
    )

    item = _card(approver, v4)

    assert (item["baseline"], item["baseline_why"]) == (2, "changes requested")
    # Drift is measured from the last approved version, whatever the base of the diff.
    assert item["drift_base"] == 1
    assert any("file_write" in sentence for sentence in item["drift"])


def test_a_first_version_has_no_base(author, approver):
    v1 = plan_services.create_plan(author, "Board review", document(1))

    item = _card(approver, v1)

    assert (item["baseline"], item["diff"], item["drift_base"]) == (None, None, None)


# --- Pages -------------------------------------------------------------------------------------


def test_the_superseded_versions_page_says_so_links_to_the_newer_one_and_offers_no_decision(
    author, approver, client
):
    v1, v2, v3 = three_versions(author)
    client.force_login(approver)

    body = client.get(f"/plans/{v1.plan_id}/versions/1/").content.decode()

    assert 'data-status="superseded"' in body
    banner = re.search(r'<section class="superseded-banner[^"]*" id="superseded"(.*?)</section>',
                       body, re.DOTALL)  # fmt: skip
    assert banner, "no superseded banner"
    assert f'href="/plans/{v1.plan_id}/versions/2/"' in banner.group(1)
    assert f'href="/plans/{v1.plan_id}/versions/3/"' in banner.group(1)  # the one to review
    assert 'id="review-form"' not in body and 'id="approve-button"' not in body
    assert "Superseded by v2" in body
    newest = client.get(f"/plans/{v1.plan_id}/versions/3/").content.decode()
    assert 'id="review-form"' in newest and 'id="superseded"' not in newest


def test_the_history_shows_which_version_superseded_which(author, viewer, client):
    v1, _, _ = three_versions(author)
    client.force_login(viewer)

    body = client.get(f"/plans/{v1.plan_id}/versions/").content.decode()

    row = re.search(r'<tr data-version="1">(.*?)</tr>', body, re.DOTALL).group(1)
    assert 'data-status="superseded"' in row and "Superseded" in row
    assert f'href="/plans/{v1.plan_id}/versions/2/"' in row


def test_the_history_says_which_versions_are_replans_and_why(author, viewer, client):
    v1 = plan_services.create_plan(author, "Board review", document(1))
    plan_services.create_version(
        v1.plan, author, document(2), note="raise the cap", replan_reason="the quota ran out"
    )
    client.force_login(viewer)

    body = client.get(f"/plans/{v1.plan_id}/versions/").content.decode()

    rows = dict(re.findall(r'<tr data-version="(\d+)">(.*?)</tr>', body, re.DOTALL))
    assert "replan: the quota ran out" in rows["2"]
    assert "replan:" not in rows["1"]


def test_new_run_never_offers_a_superseded_version_and_puts_the_newest_approved_first(
    author, approver, make_user, operator, client
):
    second = make_user("second", "approver")
    v1 = plan_services.create_plan(author, "Board review", document(1))
    v2 = plan_services.create_version(v1.plan, author, document(2))
    plan_services.approve(v2, approver, "ok")
    v3 = plan_services.create_version(v1.plan, author, document(3))
    plan_services.approve(v3, second, "ok")
    plan_services.create_version(v1.plan, author, document(4))  # waits
    client.force_login(operator)

    body = client.get("/runs/new/").content.decode()
    options = re.findall(r'<option value="(\d+):(\d+)"[^>]*>([^<]*)</option>', body)

    assert [(int(n), label) for _, n, label in options] == [
        (3, "Board review · v3 (newest approved)"),
        (2, "Board review · v2 (older: v3 is newer)"),
    ]
    asked = client.get(f"/runs/new/?plan={v1.plan_id}&version=1").content.decode()
    assert "Board review v1 cannot run: it was superseded by v2." in asked
