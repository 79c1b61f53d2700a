"""The home page and GET /me/home answer "what needs me" per role, with counts and links;
the inbox's count is live over /ws/inbox/."""

from __future__ import annotations

import json
from typing import Any

import pytest
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator

from plans import services as plan_services
from reviews.consumers import InboxConsumer

STEPS = [
    {"id": "inspect", "description": "Collect facts", "tool": "echo", "args": {"facts": [1]}},
    {
        "id": "publish",
        "description": "Write the report",
        "tool": "file_write",
        "args": {"path": "report.md", "content": "low risk"},
        "depends_on": ["inspect"],
    },
]


def _sections(client: Any) -> dict[str, dict[str, Any]]:
    body = client.get("/api/v1/me/home").json()
    return {section["name"]: section for section in body["sections"]}


@pytest.mark.django_db
def test_home_lists_what_needs_each_person_with_counts_and_links(
    author, approver, make_user, make_plan, plan_document, api_client, session_client,
    django_capture_on_commit_callbacks,
):  # fmt: skip
    from runs import services as run_services
    from tests.web.runs_helpers import FAILING_STEPS, approved_version, drain

    operator = make_user("op", "operator")
    waiting = make_plan(author, name="waiting plan")
    broken = make_plan(author, name="broken plan", document=plan_document(steps=[]))
    paused = approved_version(author, approver, STEPS, requires_approval_before=["file_write"])
    failing = approved_version(author, approver, FAILING_STEPS)
    with django_capture_on_commit_callbacks(execute=True):
        paused_run = run_services.start_run(paused, operator)
        failed_run = run_services.start_run(failing, operator)
    drain()

    mine = _sections(api_client(approver))
    assert mine["reviews"]["count"] == 1
    assert mine["reviews"]["items"][0]["url"] == f"/plans/{waiting.plan_id}/versions/1/"
    assert mine["steps"]["count"] == 1 and mine["steps"]["items"][0]["step"] == "publish"
    assert "plans_with_errors" not in mine  # approvers do not edit plans

    theirs = _sections(api_client(operator))
    assert set(theirs) == {"reconcile", "running", "failed"}
    assert theirs["reconcile"]["count"] == 0
    assert [i["url"] for i in theirs["running"]["items"]] == [f"/runs/{paused_run.pk}/"]
    assert [i["url"] for i in theirs["failed"]["items"]] == [f"/runs/{failed_run.pk}/"]
    assert theirs["failed"]["items"][0]["status"] == "needs_replan"

    written = _sections(api_client(author))
    assert written["plans_with_errors"]["count"] == 1
    assert written["plans_with_errors"]["items"][0]["url"] == f"/plans/{broken.plan_id}/edit/"
    assert "reviews" not in written and "steps" not in written

    page = session_client(approver).get("/").content.decode()
    assert 'id="home-reviews" data-count="1"' in page
    assert 'id="home-steps" data-count="1"' in page
    assert f'href="/plans/{waiting.plan_id}/versions/1/"' in page
    assert "2 items need you" in page


@pytest.mark.django_db
def test_home_for_an_auditor_shows_no_plan_or_run(auditor, api_client, session_client):
    assert api_client(auditor).get("/api/v1/me/home").json() == {"unread": 0, "sections": []}
    assert session_client(auditor).get("/").status_code == 200


@pytest.mark.django_db
def test_the_inbox_needs_a_login(anonymous_client):
    assert anonymous_client.get("/api/v1/me/inbox").status_code == 401
    assert anonymous_client.get("/inbox/").status_code == 302


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
async def test_the_unread_count_is_live_over_the_websocket(author, approver, make_plan, settings):
    settings.FORGE_INBOX_POLL_SECONDS = 30  # the wake-up, not the poll, must carry it
    version = await database_sync_to_async(make_plan)(author)
    socket = WebsocketCommunicator(InboxConsumer.as_asgi(), "/ws/inbox/")
    socket.scope["user"] = author
    connected, _ = await socket.connect()
    assert connected
    assert json.loads(await socket.receive_from(timeout=5)) == {"unread": 0}

    await database_sync_to_async(plan_services.reject)(version, approver, "not yet")

    assert json.loads(await socket.receive_from(timeout=5)) == {"unread": 1}
    await socket.disconnect()


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
async def test_the_inbox_socket_refuses_anonymous_visitors():
    from django.contrib.auth.models import AnonymousUser

    socket = WebsocketCommunicator(InboxConsumer.as_asgi(), "/ws/inbox/")
    socket.scope["user"] = AnonymousUser()
    await socket.connect()
    assert (await socket.receive_output(timeout=5))["code"] == 4403
