"""Issue 25, item 4: inbox noise. An item that asks a person to act (a version waiting
for review, a step or milestone waiting for approval, a run that needs a replan, changes
requested of an author) resolves itself once what it asks for no longer waits: it says
why ("approved by second", "superseded by v2"), leaves the unread count (the live one
over /ws/inbox/ included), and the inbox's queries do not grow with its items."""

from __future__ import annotations

import json
import re

import pytest
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator

from forge.plan import from_data
from plans import services as plan_services
from reviews import inbox
from reviews.consumers import InboxConsumer
from reviews.models import Notification
from reviews.notifications import tell
from reviews.signals import Event
from runs import services as run_services

from .runs_helpers import FAILING_STEPS, FIXED_STEPS, approved_version, drain

pytestmark = pytest.mark.django_db(transaction=True)

PAUSING_STEPS = [
    {"id": "inspect", "description": "Collect facts", "tool": "echo", "args": {"facts": [1]}},
    {
        "id": "publish",
        "description": "Write the report",
        "tool": "file_write",
        "args": {"path": "report.md", "content": "low risk"},
        "depends_on": ["inspect"],
    },
]


@pytest.fixture(autouse=True)
def workspaces(settings, tmp_path):
    settings.FORGE_WORKSPACES = str(tmp_path / "workspaces")


@pytest.fixture
def second(make_user):
    return make_user("second", "approver")


def document(n=1):
    return from_data({"goal": "Publish", "steps": [
        {"id": "say", "description": "Say it", "tool": "echo", "args": {"n": n}}]})  # fmt: skip


def item(user, kind, **lookup):
    return Notification.objects.get(recipient=user, kind=kind, **lookup)


def inbox_of(api_client, user):
    return api_client(user).get("/api/v1/me/inbox").json()


# --- Versions ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("decide", "why"),
    [
        (plan_services.approve, "approved by approver"),
        (plan_services.reject, "rejected by approver"),
        (plan_services.request_changes, "changes requested by approver"),
    ],
)
def test_a_review_request_resolves_when_anyone_decides(decide, why, author, approver, second,
                                                       api_client):  # fmt: skip
    version = plan_services.create_plan(author, "Board review", document())
    assert inbox_of(api_client, second)["unread"] == 1

    decide(version, approver, "done")

    for person in (second, approver):  # the one who decided too
        told = item(person, "version_submitted")
        assert told.resolved_at is not None and told.resolution == why
        body = inbox_of(api_client, person)
        assert body["unread"] == 0
        [data] = [i for i in body["items"] if i["kind"] == "version_submitted"]
        assert (data["resolved"], data["resolution"], data["read"]) == (True, why, False)
    assert inbox.unread_count(second) == 0


def test_a_review_request_resolves_when_its_version_is_superseded(author, second, api_client):
    v1 = plan_services.create_plan(author, "Board review", document(1))
    plan_services.create_version(v1.plan, author, document(2))

    old, new = (item(second, "version_submitted", version_number=n) for n in (1, 2))

    assert (old.resolution, new.resolved_at) == ("superseded by v2", None)
    assert inbox_of(api_client, second)["unread"] == 1
    assert api_client(second).get("/api/v1/me/inbox?unread=true").json()["items"][0]["version"] == 2


def test_changes_requested_resolve_when_the_author_submits_a_newer_version(author, approver):
    v1 = plan_services.create_plan(author, "Board review", document(1))
    plan_services.request_changes(v1, approver, "smaller please")
    asked = item(author, "changes_requested")
    assert asked.resolved_at is None and asked.comment == "smaller please"

    plan_services.create_version(v1.plan, author, document(2), submit=False)  # a draft: not yet
    assert item(author, "changes_requested").resolved_at is None
    plan_services.create_version(v1.plan, author, document(3))

    assert item(author, "changes_requested").resolution == "answered by v3"


def test_news_never_resolves(author, approver):
    version = plan_services.create_plan(author, "Board review", document())
    plan_services.reject(version, approver, "no")
    plan_services.create_version(version.plan, author, document(2))

    assert item(author, "version_rejected").resolved_at is None
    assert inbox.unread_count(author) == 1


def test_an_ask_told_after_its_subject_was_decided_is_resolved_at_once(author, approver, second):
    """The tell runs after the submission's commit; a decision may land before it."""
    version = plan_services.create_plan(author, "Board review", document())
    Notification.objects.all().delete()
    plan_services.approve(version, approver, "quick")

    tell(Event("version_submitted", "author", version_id=version.pk))

    told = item(second, "version_submitted")
    assert told.resolution == "approved by approver"
    assert inbox.unread_count(second) == 0


# --- Runs ------------------------------------------------------------------------------------


def paused_run(author, approver, operator):
    version = approved_version(author, approver, PAUSING_STEPS,
                               requires_approval_before=["file_write"])  # fmt: skip
    run = run_services.start_run(version, operator)
    drain()
    run.refresh_from_db()
    assert run.status == "awaiting_approval"
    return run


def test_a_waiting_step_resolves_when_another_approver_approves_it(
    author, approver, second, operator, api_client
):
    run = paused_run(author, approver, operator)
    assert item(second, "step_waiting").resolved_at is None

    run_services.approve_step(run, "publish", approver, "fine")

    assert item(second, "step_waiting").resolution == "approved by approver"
    assert item(approver, "step_waiting").resolution == "approved by approver"
    assert inbox_of(api_client, second)["unread"] == 0


def test_a_waiting_step_resolves_when_its_run_is_cancelled(author, approver, second, operator):
    run = paused_run(author, approver, operator)

    run_services.cancel_run(run, operator)

    assert item(second, "step_waiting").resolution == f"run #{run.pk} cancelled"


def test_a_waiting_milestone_resolves_when_it_is_reviewed(author, approver, second, operator):
    from tests.web.test_milestone_reviews import paused_run as milestone_run

    run = milestone_run(author, approver, operator)
    assert item(second, "step_waiting", step_id="facts").resolved_at is None

    run_services.review_milestone(run, "facts", approver, "48 is right")

    assert item(second, "step_waiting", step_id="facts").resolution == "reviewed by approver"


def test_a_run_that_needs_a_replan_resolves_when_it_resumes(author, approver, operator):
    version = approved_version(author, approver, FAILING_STEPS)
    run = run_services.start_run(version, operator)
    drain()
    assert item(operator, "run_needs_replan").resolved_at is None
    data = {"goal": "Prepare the supplier risk report", "steps": FIXED_STEPS}
    fixed = plan_services.create_version(version.plan, author, from_data(data), note="fix")
    plan_services.approve(fixed, approver, "ok")

    run_services.resume_run(run, fixed, operator)

    assert item(operator, "run_needs_replan").resolution == "resumed on v2"


# --- What the person sees ----------------------------------------------------------------------


def test_the_inbox_page_strikes_resolved_items_through_with_why(author, approver, second, client):
    decided = plan_services.create_plan(author, "Decided plan", document())
    plan_services.approve(decided, approver, "ok")
    plan_services.create_plan(author, "Open plan", document())
    client.force_login(second)

    body = client.get("/inbox/").content.decode()

    rows = re.findall(r'<li class="inbox-item card([^"]*)"[^>]*data-kind="version_submitted"'
                      r'.*?<a class="inbox-title"[^>]*>([^<]*)</a>', body, re.DOTALL)  # fmt: skip
    by_title = {title: classes for classes, title in rows}
    assert by_title["Decided plan v1 by author waits for your review"].split() == ["resolved"]
    assert by_title["Open plan v1 by author waits for your review"].split() == ["unread"]
    assert "Resolved: approved by approver" in body
    assert 'id="inbox-unread-note">1 unread</span>' in body
    assert 'id="inbox-count" title="1 unread">1</span>' in body
    unread_only = client.get("/inbox/?show=unread").content.decode()
    assert "Decided plan" not in unread_only and "Open plan" in unread_only


def test_the_inbox_costs_the_same_queries_for_one_item_or_many(author, approver, second, client):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    client.force_login(second)

    def queries(path):
        with CaptureQueriesContext(connection) as captured:
            assert client.get(path).status_code == 200
        return len(captured)

    plan_services.approve(plan_services.create_plan(author, "p0", document()), approver)
    few = (queries("/inbox/"), queries("/api/v1/me/inbox"))
    for n in range(1, 8):
        version = plan_services.create_plan(author, f"p{n}", document())
        if n % 2:
            plan_services.approve(version, approver)
    many = (queries("/inbox/"), queries("/api/v1/me/inbox"))

    assert Notification.objects.filter(recipient=second).count() == 8
    assert many == few


@pytest.mark.asyncio
async def test_the_live_count_drops_when_an_item_resolves(author, approver, second, settings):
    settings.FORGE_INBOX_POLL_SECONDS = 30  # the wake-up, not the poll, must carry it
    version = await database_sync_to_async(plan_services.create_plan)(
        author, "Board review", document()
    )
    socket = WebsocketCommunicator(InboxConsumer.as_asgi(), "/ws/inbox/")
    socket.scope["user"] = second
    connected, _ = await socket.connect()
    assert connected
    assert json.loads(await socket.receive_from(timeout=5)) == {"unread": 1}

    await database_sync_to_async(plan_services.approve)(version, approver, "ok")

    assert json.loads(await socket.receive_from(timeout=5)) == {"unread": 0}
    await socket.disconnect()
