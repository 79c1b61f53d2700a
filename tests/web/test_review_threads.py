"""Review threads on plan versions and "request changes" (reviews.api, reviews.threads),
and putting a draft up for review without a new version (issue 12, problems 3 and 4).

Comments carry over to the next version where their step is unchanged and read as
outdated where it changed or was removed; every write is audited and tells the review
loop (``review_event``) once committed.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from audit.models import AuditEvent
from forge.plan import from_data
from plans import services as plan_services
from plans.models import PlanVersion
from reviews import queue
from reviews.models import Thread
from reviews.signals import review_event


def _post(client: Any, path: str, body: dict[str, Any] | None = None) -> Any:
    return client.post(f"/api/v1{path}", body or {}, content_type="application/json")


@pytest.fixture
def events():
    """Every review_event sent, as (kind, actor, version_id, step_id, comment)."""
    seen: list[tuple[Any, ...]] = []

    def receive(sender: Any, **kw: Any) -> None:
        seen.append((kw["kind"], kw["actor"], kw["version_id"], kw["step_id"], kw["comment"]))

    review_event.connect(receive, weak=False)
    yield seen
    review_event.disconnect(receive)


def _changed(document: dict[str, Any], **args: Any) -> dict[str, Any]:
    changed = copy.deepcopy(document)
    changed["steps"][1]["args"] = args
    return changed


def test_a_reviewer_comments_on_a_step_and_on_the_version_audited_and_told(
    author, approver, make_plan, api_client, events, django_capture_on_commit_callbacks
):
    v1 = make_plan(author)
    client = api_client(approver)

    with django_capture_on_commit_callbacks(execute=True):
        on_step = _post(client, f"/versions/{v1.pk}/threads",
                        {"step_id": "publish", "body": "Where does the summary go?"})  # fmt: skip
        on_version = _post(client, f"/versions/{v1.pk}/threads", {"body": "Add a budget."})

    assert on_step.status_code == 201, on_step.json()
    assert on_step.json()["step_id"] == "publish"
    assert on_step.json()["comments"][0] == {
        **on_step.json()["comments"][0], "author": "approver", "body": "Where does the summary go?"
    }  # fmt: skip
    assert on_version.json()["step_id"] == ""
    listed = api_client(author).get(f"/api/v1/versions/{v1.pk}/threads").json()
    assert [t["step_id"] for t in listed["threads"]] == ["publish", ""]
    assert listed["open"] == 2
    audit = AuditEvent.objects.filter(action="review.thread_opened").order_by("pk")
    assert [(e.object_type, e.object_id, e.payload["step"]) for e in audit] == [
        ("plan", str(v1.plan_id), "publish"), ("plan", str(v1.plan_id), "")
    ]  # fmt: skip
    assert audit[0].payload["text"] == "Where does the summary go?"
    assert events == [
        ("comment_added", "approver", v1.pk, "publish", "Where does the summary go?"),
        ("comment_added", "approver", v1.pk, "", "Add a budget."),
    ]


def test_replies_resolve_and_reopen_are_audited_and_told(
    author, approver, make_plan, api_client, events, django_capture_on_commit_callbacks
):
    v1 = make_plan(author)
    thread = _post(api_client(approver), f"/versions/{v1.pk}/threads",
                   {"step_id": "read", "body": "Which file?"}).json()  # fmt: skip

    with django_capture_on_commit_callbacks(execute=True):
        replied = _post(api_client(author), f"/threads/{thread['id']}/replies",
                        {"body": "notes.md, the release notes"})  # fmt: skip
        resolved = _post(api_client(author), f"/threads/{thread['id']}/resolve")
        again = _post(api_client(author), f"/threads/{thread['id']}/resolve")

    assert replied.status_code == 201
    assert [c["author"] for c in replied.json()["comments"]] == ["approver", "author"]
    assert resolved.json()["resolved"] and resolved.json()["resolved_by"] == "author"
    assert again.status_code == 200
    listed = api_client(author).get(f"/api/v1/versions/{v1.pk}/threads").json()
    assert listed["open"] == 0
    reopened = _post(api_client(approver), f"/threads/{thread['id']}/reopen")
    assert reopened.json()["resolved"] is False and reopened.json()["resolved_by"] == ""
    actions = list(
        AuditEvent.objects.filter(action__startswith="review.").order_by("pk")
        .values_list("action", flat=True)
    )  # fmt: skip
    # A second resolve changes nothing and is not recorded twice.
    assert actions == ["review.thread_opened", "review.comment_added",
                       "review.thread_resolved", "review.thread_reopened"]  # fmt: skip
    assert [e[0] for e in events] == ["comment_added", "thread_resolved"]


def test_comments_carry_over_where_the_step_is_unchanged_and_go_outdated_where_it_changed(
    author, approver, make_plan, plan_document, api_client
):
    v1 = make_plan(author)
    client = api_client(approver)
    for step, body in (("read", "Fine."), ("publish", "Summarise more."), ("", "Overall ok.")):
        _post(client, f"/versions/{v1.pk}/threads", {"step_id": step, "body": body})
    v2 = plan_services.create_version(v1.plan, author, from_data(_changed(plan_document(),
                                      summary="a longer summary")))  # fmt: skip
    dropped = copy.deepcopy(v2.document)
    dropped["steps"] = [step for step in dropped["steps"] if step["id"] != "read"]
    dropped["steps"][0]["depends_on"] = []
    v3 = plan_services.create_version(v1.plan, author, from_data(dropped))

    def seen(version: PlanVersion) -> dict[str, tuple[Any, ...]]:
        data = api_client(author).get(f"/api/v1/versions/{version.pk}/threads").json()
        return {t["step_id"]: (t["outdated_reason"], t["carried"], t["version"])
                for t in data["threads"]}  # fmt: skip

    assert seen(v1) == {"read": ("", False, 1), "publish": ("", False, 1), "": ("", False, 1)}
    assert seen(v2) == {"read": ("", True, 1), "publish": ("changed", True, 1), "": ("", True, 1)}
    assert seen(v3) == {"read": ("removed", True, 1), "publish": ("changed", True, 1),
                        "": ("", True, 1)}  # fmt: skip
    # A thread opened on v3 is not shown on the versions before it.
    _post(client, f"/versions/{v3.pk}/threads", {"step_id": "publish", "body": "Better."})
    assert len(seen(v3)) == 3 and Thread.objects.count() == 4
    assert api_client(author).get(f"/api/v1/versions/{v2.pk}/threads").json()["open"] == 2


def test_who_may_comment_and_what_is_refused(
    author, approver, viewer, operator, make_plan, api_client
):
    v1 = make_plan(author)
    path = f"/versions/{v1.pk}/threads"

    assert api_client(viewer).get(f"/api/v1{path}").status_code == 200
    for user in (viewer, operator):
        refused = _post(api_client(user), path, {"body": "hello"})
        assert refused.status_code == 403
    assert _post(api_client(author), path, {"body": "A note to myself"}).status_code == 201
    unknown = _post(api_client(approver), path, {"step_id": "nope", "body": "?"})
    assert (unknown.status_code, unknown.json()["code"]) == (400, "unknown_step")
    assert _post(api_client(approver), path, {"body": ""}).status_code == 422
    blank = _post(api_client(approver), path, {"body": "   "})
    assert (blank.status_code, blank.json()["code"]) == (400, "invalid_comment")
    assert _post(api_client(approver), "/versions/999999/threads", {"body": "x"}).status_code == 404
    thread = Thread.objects.get()
    assert _post(api_client(viewer), f"/threads/{thread.pk}/resolve").status_code == 403
    assert Thread.objects.count() == 1 and not Thread.objects.get().resolved


def test_request_changes_sends_the_version_back_and_never_by_its_author(
    author, approver, viewer, make_plan, api_client, events, django_capture_on_commit_callbacks
):
    v1 = make_plan(author)
    path = f"/versions/{v1.pk}/request-changes"

    assert _post(api_client(author), path, {"comment": "mine"}).status_code == 403
    assert _post(api_client(viewer), path, {"comment": "no"}).status_code == 403
    with django_capture_on_commit_callbacks(execute=True):
        answer = _post(api_client(approver), path, {"comment": "Publish needs a contract"})

    assert answer.status_code == 200, answer.json()
    assert answer.json()["decision"] == "changes_requested"
    v1.refresh_from_db()
    assert v1.status == "changes_requested"
    audit = AuditEvent.objects.get(action="plan_version.changes_requested")
    assert audit.actor == "approver" and audit.payload["comment"] == "Publish needs a contract"
    assert events == [("changes_requested", "approver", v1.pk, "", "Publish needs a contract")]
    # It reads so everywhere: the API, the plan list, and the queue no longer offers it.
    detail = api_client(author).get(f"/api/v1/plans/{v1.plan_id}/versions/1").json()
    assert detail["status"] == "changes_requested"
    assert queue.queue_for(approver).versions == []
    # The form beside approve and reject posts by plan and number.
    by_number = _post(api_client(approver), f"/plans/{v1.plan_id}/versions/1/request-changes",
                      {"comment": "still"})  # fmt: skip
    assert by_number.status_code == 200


def test_changes_cannot_be_requested_of_a_draft(author, approver, make_plan, api_client):
    draft = make_plan(author, submit=False)
    answer = _post(api_client(approver), f"/versions/{draft.pk}/request-changes", {})
    assert (answer.status_code, answer.json()["code"]) == (409, "not_submitted")


# --- Problem 3: a draft submitted for review without a new version -----------------------


def test_a_draft_is_submitted_for_review_as_it_is_and_waits_in_the_queue(
    author, approver, make_plan, api_client, events, django_capture_on_commit_callbacks
):
    draft = make_plan(author, submit=False)
    assert draft.status == "draft"
    assert queue.queue_for(approver).versions == []

    with django_capture_on_commit_callbacks(execute=True):
        answer = _post(api_client(author), f"/versions/{draft.pk}/submit")
        again = _post(api_client(author), f"/versions/{draft.pk}/submit")

    assert answer.status_code == 200, answer.json()
    assert answer.json() == {"plan": draft.plan_id, "version": 1, "version_id": draft.pk,
                             "status": "awaiting_approval", "submitted": True}  # fmt: skip
    assert again.status_code == 200
    assert PlanVersion.objects.filter(plan=draft.plan).count() == 1  # no new version
    assert [item["number"] for item in queue.queue_for(approver).versions] == [1]
    assert AuditEvent.objects.filter(action="plan_version.submitted").count() == 1
    assert events == [("version_submitted", "author", draft.pk, "", "")]


def test_submitting_needs_the_author_role_and_a_draft_that_compiles(
    author, approver, viewer, make_plan, plan_document, api_client
):
    draft = make_plan(author, submit=False)
    for user in (viewer, approver):
        assert _post(api_client(user), f"/versions/{draft.pk}/submit").status_code == 403
    broken = make_plan(author, document=plan_document(deliverable="missing"), submit=False)
    refused = _post(api_client(author), f"/versions/{broken.pk}/submit")
    assert (refused.status_code, refused.json()["code"]) == (409, "has_errors")
    assert PlanVersion.objects.get(pk=draft.pk).status == "draft"


# --- Problem 4: the editor shows why a version was sent back, and its open threads -----


@pytest.mark.parametrize("decision", ["reject", "request-changes"])
def test_the_editor_shows_the_comment_that_sent_the_version_back(
    decision, author, approver, make_plan, api_client, session_client
):
    v1 = make_plan(author)
    _post(api_client(approver), f"/plans/{v1.plan_id}/versions/1/{decision}",
          {"comment": "The <summary> must name the release"})  # fmt: skip

    page = session_client(author).get(f"/plans/{v1.plan_id}/edit/")

    html = page.content.decode()
    words = "Rejected" if decision == "reject" else "Changes requested"
    assert f"<strong>{words} by approver</strong>" in html
    assert '<q id="review-decision-comment">The &lt;summary&gt; must name the release</q>' in html


def test_the_editor_of_a_version_nobody_sent_back_has_no_decision_banner(
    author, make_plan, session_client
):
    v1 = make_plan(author)
    html = session_client(author).get(f"/plans/{v1.plan_id}/edit/").content.decode()
    assert 'id="review-decision"' not in html
    assert f'"id": {v1.pk}' in html  # the editor names the version for its threads


def test_the_queue_card_shows_the_open_threads(author, approver, make_user, make_plan,
                                               api_client, session_client):  # fmt: skip
    v1 = make_plan(author)
    _post(api_client(author), f"/versions/{v1.pk}/threads",
          {"step_id": "publish", "body": "Is echo enough here?"})  # fmt: skip
    grace = make_user("grace", "approver")

    html = session_client(grace).get("/review/").content.decode()

    assert 'data-open-threads="1"' in html
    assert "Is echo enough here?" in html
    assert 'data-decision="request-changes"' in html
