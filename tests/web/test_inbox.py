"""The inbox: who is told what (issue 12, problem 4: an author never learned why a version
was rejected), read and unread with the nav's count, the same over the API per role, and
e-mails through Django's locmem backend."""

from __future__ import annotations

from typing import Any

import pytest
from django.core import mail

from plans import services as plan_services
from reviews.models import Notification
from reviews.signals import KINDS, review_event
from tests.web.runs_helpers import drain

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _site_address(settings: Any) -> None:
    # Mail goes to the locmem backend: the test runner sets every mailer to it.
    settings.FORGE_BASE_URL = "https://forge.example.com"


@pytest.fixture
def people(author: Any, approver: Any, make_user: Any) -> dict[str, Any]:
    author.email = "author@example.com"
    author.save()
    approver.email = "approver@example.com"
    approver.save()
    second = make_user("second", "approver", email="second@example.com")
    return {"author": author, "approver": approver, "second": second}


def _reject(version: Any, user: Any, comment: str, capture: Any) -> None:
    with capture(execute=True):
        plan_services.reject(version, user, comment)


def test_the_author_sees_a_rejection_with_its_comment_in_the_inbox_and_the_nav(
    people, make_plan, api_client, session_client, django_capture_on_commit_callbacks
):
    author, approver = people["author"], people["approver"]
    version = make_plan(author)

    _reject(version, approver, "The publish step posts to production: use staging.",
            django_capture_on_commit_callbacks)  # fmt: skip

    body = api_client(author).get("/api/v1/me/inbox").json()
    assert body["unread"] == 1
    [item] = body["items"]
    assert item["kind"] == "version_rejected"
    assert item["comment"] == "The publish step posts to production: use staging."
    assert item["title"] == f"release notes v{version.number} was rejected by approver"
    assert item["url"] == f"/plans/{version.plan_id}/versions/{version.number}/"
    assert item["actor"] == "approver" and item["read"] is False

    page = session_client(author).get("/inbox/").content.decode()
    assert "The publish step posts to production: use staging." in page
    assert 'id="inbox-count" title="1 unread">1</span>' in page

    # The e-mail goes out on a worker, with the comment and the exact page's address.
    drain()
    [message] = [m for m in mail.outbox if m.to == ["author@example.com"]]
    assert message.subject == f"[Forge] {item['title']}"
    assert "use staging" in message.body
    assert f"https://forge.example.com/plans/{version.plan_id}/versions/{version.number}/" in (
        message.body
    )


def test_approval_and_submission_reach_the_right_people_and_never_the_actor(
    people, make_plan, api_client, django_capture_on_commit_callbacks
):
    author, approver, second = people["author"], people["approver"], people["second"]
    with django_capture_on_commit_callbacks(execute=True):
        version = make_plan(author)  # submitted: both approvers are told, not its author
    assert [i["kind"] for i in api_client(approver).get("/api/v1/me/inbox").json()["items"]] == [
        "version_submitted"
    ]
    assert api_client(second).get("/api/v1/me/inbox").json()["unread"] == 1
    assert api_client(author).get("/api/v1/me/inbox").json()["items"] == []

    with django_capture_on_commit_callbacks(execute=True):
        plan_services.approve(version, approver, "fine")

    kinds = [i["kind"] for i in api_client(author).get("/api/v1/me/inbox").json()["items"]]
    assert kinds == ["version_approved"]
    # The approver is not told about their own approval.
    assert [i["kind"] for i in api_client(approver).get("/api/v1/me/inbox").json()["items"]] == [
        "version_submitted"
    ]


def test_the_same_news_twice_makes_one_item(people, make_plan, django_capture_on_commit_callbacks):
    author, approver = people["author"], people["approver"]
    with django_capture_on_commit_callbacks(execute=True):
        version = make_plan(author)
        # Another part saying the same (e.g. a draft submitted through review threads).
        review_event.send(sender=None, kind="version_submitted", actor="author",
                          version_id=version.pk, run_id=None, step_id="", comment="")  # fmt: skip
    assert Notification.objects.filter(recipient=approver, kind="version_submitted").count() == 1


@pytest.mark.parametrize("kind", ["changes_requested", "comment_added", "thread_resolved"])
def test_review_thread_events_reach_the_author_with_the_step(
    kind, people, make_plan, api_client, django_capture_on_commit_callbacks
):
    author = people["author"]
    version = make_plan(author)
    with django_capture_on_commit_callbacks(execute=True):
        review_event.send(sender=None, kind=kind, actor="approver", version_id=version.pk,
                          run_id=None, step_id="publish", comment="Say which channel.")  # fmt: skip
    [item] = api_client(author).get("/api/v1/me/inbox").json()["items"]
    assert item["kind"] == kind and item["step"] == "publish"
    assert item["comment"] == "Say which channel."
    assert item["url"].endswith("#step-publish")
    assert "on step publish" in item["title"]


def test_every_kind_has_a_rule():
    from reviews.notifications import RULES

    assert set(RULES) == set(KINDS)


def test_unread_counts_and_marking_read_touch_only_my_items(
    people, make_plan, api_client, session_client, django_capture_on_commit_callbacks
):
    author, approver = people["author"], people["approver"]
    first, second = make_plan(author), make_plan(author, name="other")
    _reject(first, approver, "no", django_capture_on_commit_callbacks)
    _reject(second, approver, "no again", django_capture_on_commit_callbacks)
    client = api_client(author)
    items = client.get("/api/v1/me/inbox").json()["items"]
    assert len(items) == 2

    # The approver cannot mark the author's items.
    answer = api_client(approver).post(
        "/api/v1/me/inbox/read", {"ids": [items[0]["id"]]}, content_type="application/json"
    )
    assert answer.json()["changed"] == 0
    answer = client.post(
        "/api/v1/me/inbox/read", {"ids": [items[0]["id"]]}, content_type="application/json"
    )
    assert answer.json() == {"unread": 1, "changed": 1}
    assert [i["id"] for i in client.get("/api/v1/me/inbox?unread=true").json()["items"]] == [
        items[1]["id"]
    ]
    # Opening an item on the page marks it read and opens its exact page.
    browser = session_client(author)
    opened = browser.get(f"/inbox/{items[1]['id']}/open/")
    assert opened.status_code == 302 and opened["Location"] == items[1]["url"]
    assert client.get("/api/v1/me/inbox").json()["unread"] == 0
    assert browser.get(f"/inbox/{items[1]['id']}/open/").status_code == 302
    assert session_client(approver).get(f"/inbox/{items[1]['id']}/open/").status_code == 404
    # ... and unread again.
    answer = client.post("/api/v1/me/inbox/read", {"unread": True}, content_type="application/json")
    assert answer.json() == {"unread": 2, "changed": 2}


def test_preferences_choose_kinds_and_e_mail_and_are_audited(
    people, make_plan, api_client, django_capture_on_commit_callbacks
):
    from audit.models import AuditEvent

    author, approver = people["author"], people["approver"]
    client = api_client(author)
    assert client.get("/api/v1/me/notifications").json() == {"kinds": list(KINDS), "email": True}
    answer = client.put(
        "/api/v1/me/notifications", {"kinds": ["version_approved"], "email": False},
        content_type="application/json",
    )  # fmt: skip
    assert answer.status_code == 200
    event = AuditEvent.objects.filter(action="notifications.preferences_changed").get()
    assert event.actor == "author" and event.payload["after"]["kinds"] == ["version_approved"]

    _reject(make_plan(author), approver, "no", django_capture_on_commit_callbacks)
    assert client.get("/api/v1/me/inbox").json()["items"] == []  # rejections left out
    with django_capture_on_commit_callbacks(execute=True):
        plan_services.approve(make_plan(author, name="b"), approver, "ok")
    assert [i["kind"] for i in client.get("/api/v1/me/inbox").json()["items"]] == [
        "version_approved"
    ]
    drain()
    assert [m for m in mail.outbox if m.to == ["author@example.com"]] == []  # e-mail off

    bad = client.put("/api/v1/me/notifications", {"kinds": ["gossip"], "email": True},
                     content_type="application/json")  # fmt: skip
    assert bad.status_code == 400 and bad.json()["code"] == "unknown_notification_kind"


def test_the_settings_page_saves_preferences(people, session_client):
    from reviews.notifications import kinds_for

    client = session_client(people["author"])
    page = client.get("/inbox/settings/")
    assert page.status_code == 200 and 'name="kinds" value="version_rejected" checked' in (
        page.content.decode()
    )
    token = client.cookies["csrftoken"].value
    answer = client.post(
        "/inbox/settings/", {"kinds": ["run_failed", "nonsense"], "csrfmiddlewaretoken": token}
    )
    assert answer.status_code == 302
    assert kinds_for(people["author"]) == ["run_failed"]
    people["author"].refresh_from_db()
    assert people["author"].notification_preference.email is False


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


def test_a_waiting_step_reaches_approvers_but_never_the_versions_author(
    people, make_user, api_client, django_capture_on_commit_callbacks
):
    from runs import services as run_services
    from tests.web.runs_helpers import approved_version

    author, approver = people["author"], people["approver"]
    both = make_user("both", "author", "approver")  # may approve steps, but wrote this one
    operator = make_user("op", "operator")
    version = approved_version(both, approver, PAUSING_STEPS,
                               requires_approval_before=["file_write"])  # fmt: skip
    with django_capture_on_commit_callbacks(execute=True):
        run = run_services.start_run(version, operator)
    with django_capture_on_commit_callbacks(execute=True):
        drain()
    run.refresh_from_db()
    assert run.status == "awaiting_approval"
    told = set(
        Notification.objects.filter(kind="step_waiting").values_list(
            "recipient__username", flat=True
        )
    )
    assert told == {"approver", "second"}  # not "both" (its author), "op" or "author"
    [item] = api_client(approver).get("/api/v1/me/inbox?unread=true").json()["items"][:1]
    assert item["kind"] == "step_waiting" and item["step"] == "publish"
    assert item["url"] == "/review/"
    del author


def test_a_run_that_needs_a_replan_reaches_whoever_started_it(
    people, make_user, api_client, django_capture_on_commit_callbacks
):
    from runs import services as run_services
    from tests.web.runs_helpers import FAILING_STEPS, approved_version

    operator = make_user("op", "operator", email="op@example.com")
    version = approved_version(people["author"], people["approver"], FAILING_STEPS)
    with django_capture_on_commit_callbacks(execute=True):
        run = run_services.start_run(version, operator)
    with django_capture_on_commit_callbacks(execute=True):
        drain()
    run.refresh_from_db()
    assert run.status == "needs_replan"
    [item] = api_client(operator).get("/api/v1/me/inbox").json()["items"]
    assert item["kind"] == "run_needs_replan" and item["run"] == run.pk
    assert item["step"] == "score" or item["step"] is None
    assert item["url"].startswith(f"/runs/{run.pk}/")
    assert api_client(people["author"]).get("/api/v1/me/inbox").json()["unread"] == 0
    drain()
    assert [m.to for m in mail.outbox] == [["op@example.com"]]


def test_a_milestone_waiting_for_review_reaches_approvers(
    people, make_user, api_client, django_capture_on_commit_callbacks
):
    from runs import services as run_services
    from tests.web.runs_helpers import approved_version
    from tests.web.test_milestone_reviews import MILESTONES, STEPS

    operator = make_user("op", "operator")
    version = approved_version(people["author"], people["approver"], STEPS, milestones=MILESTONES)
    with django_capture_on_commit_callbacks(execute=True):
        run = run_services.start_run(version, operator)
    with django_capture_on_commit_callbacks(execute=True):
        drain()
    run.refresh_from_db()
    assert run.status == "awaiting_approval"
    [item] = api_client(people["second"]).get("/api/v1/me/inbox").json()["items"]
    assert item["kind"] == "step_waiting" and item["step"] == "facts"
    assert item["title"] == f"Milestone facts of run #{run.pk} (release notes) waits for you" or (
        item["title"].startswith("Milestone facts of run #")
    )
    assert api_client(people["author"]).get("/api/v1/me/inbox").json()["items"] == []
