"""Milestone reviews on the web (issue 15, problem 2): a stored run pauses after a
milestone that ends in a review; only a person other than the version's author lets it go
on, through the API or the review queue; the decision is audited; a review releases steps
only through the scheduler, so a step that needs approval still waits for its own."""

from __future__ import annotations

import pytest

from audit.models import AuditEvent
from forge.runtime.gate import AuthorCannotDecide
from reviews import queue as review
from runs import services
from runs.models import Run

from .runs_helpers import approved_version, drain

pytestmark = pytest.mark.django_db(transaction=True)

STEPS = [
    {"id": "count", "description": "Count the open orders", "tool": "echo",
     "args": {"orders": 48}, "done_when": {"required_keys": ["orders"]}},
    {"id": "write", "description": "Write the orders summary", "tool": "file_write",
     "depends_on": ["count"], "args": {"path": "summary.md", "content": "48 orders\n"},
     "done_when": {"required_keys": ["committed"]}, "rollback_hint": "delete summary.md"},
]  # fmt: skip
MILESTONES = [
    {"id": "facts", "title": "Count the orders", "steps": ["count"], "review": True},
    {"id": "report", "steps": ["write"]},
]


def paused_run(author, approver, operator, **fields):
    version = approved_version(author, approver, STEPS, milestones=MILESTONES, **fields)
    run = services.start_run(version, operator)
    drain()
    run.refresh_from_db()
    return run


def test_a_run_pauses_after_a_reviewed_milestone_and_goes_on_after_the_review(
    author, approver, operator
):
    run = paused_run(author, approver, operator)

    assert run.status == "awaiting_approval"
    assert run.blocked_reason == (
        "milestone 'facts' waits for review by an approver who did not write this version"
    )
    assert run.steps.get(step_id="write").status == "pending"

    services.review_milestone(run, "facts", approver, "48 is what sales reported")
    drain()
    run.refresh_from_db()

    assert run.status == "succeeded"
    audit = AuditEvent.objects.get(action="run.milestone_reviewed")
    assert (audit.actor, audit.object_id) == ("approver", str(run.pk))
    assert audit.payload == {"milestone": "facts", "comment": "48 is what sales reported"}
    event = run.events.get(event_type="milestone_reviewed")
    assert (event.actor, event.facts["milestone"]) == ("approver", "facts")


def test_the_author_of_the_version_cannot_review_its_milestone(make_user, approver, operator):
    both = make_user("both", "author", "approver")  # writes the plan, and approves others'
    run = paused_run(both, approver, operator)

    with pytest.raises(AuthorCannotDecide) as refused:  # the core's four eyes
        services.review_milestone(run, "facts", both)
    assert refused.value.code == "self_approval"
    run.refresh_from_db()
    assert run.status == "awaiting_approval"


def test_a_review_releases_a_step_that_still_waits_for_its_own_approval(author, approver, operator):
    run = paused_run(author, approver, operator, requires_approval_before=["file_write"])

    services.review_milestone(run, "facts", approver)
    drain()
    run.refresh_from_db()

    assert run.status == "awaiting_approval"
    assert run.steps.get(step_id="write").status == "awaiting_approval"


def test_the_api_reviews_a_milestone_and_refuses_one_not_reached(
    author, approver, operator, api_client
):
    run = paused_run(author, approver, operator)
    client = api_client(approver)

    early = client.post(
        f"/api/v1/runs/{run.pk}/milestones/report/review",
        {"comment": ""},
        content_type="application/json",
    )
    done = client.post(
        f"/api/v1/runs/{run.pk}/milestones/facts/review",
        {"comment": "fine"},
        content_type="application/json",
    )
    again = client.post(
        f"/api/v1/runs/{run.pk}/milestones/facts/review",
        {"comment": "fine"},
        content_type="application/json",
    )

    assert early.status_code == 409
    assert done.status_code == 200, done.content
    assert again.status_code == 409
    assert (
        api_client(author)
        .post(f"/api/v1/runs/{run.pk}/milestones/facts/review", {}, content_type="application/json")
        .status_code
        == 403
    )


def test_the_queue_offers_a_reached_milestone_with_its_facts_to_other_approvers(
    author, approver, operator, client
):
    run = paused_run(author, approver, operator)

    found = review.queue_for(approver)
    (item,) = found.milestones
    assert (item["run"]["id"], item["milestone"], item["title"]) == (
        run.pk,
        "facts",
        "Count the orders",
    )
    assert '"orders": 48' in item["facts"][0]["output"]["text"]
    client.force_login(approver)
    body = client.get("/review/").content.decode()
    assert 'data-kind="milestone"' in body and "Let the run continue" in body

    services.review_milestone(Run.objects.get(), "facts", approver)
    assert review.queue_for(approver).milestones == ()
