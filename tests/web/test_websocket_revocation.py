"""Open websockets lose their access with their credentials (issue 26, defect 9): a run
stream opened with a token kept streaming after the token was revoked (4-5 more events in
9 s, never closed). Revoking the token, logging out, or losing the role a socket needs
now closes it with 4403 within 5 s, and it sends nothing after: at once when the change
is made in this process (a wake-up on the channel layer), and by the periodic check of
each open socket's credentials otherwise (another process, no Redis, a lost wake-up).
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.db import database_sync_to_async
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.conf import settings as django_settings
from django.test import Client
from django.utils import timezone

from accounts import services as account_services
from accounts.models import ApiToken, User
from accounts.websockets import WebsocketAuthStack
from reviews.routing import websocket_urlpatterns as review_routes
from runs.models import Run, RunEvent
from runs.routing import websocket_urlpatterns as run_routes

from .runs_helpers import approved_version

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]

STEPS = [{"id": "wait", "description": "Wait for the supplier's answer", "tool": "noop"}]
PROMISE = 5.0  # seconds within which a socket must close

APP = WebsocketAuthStack(URLRouter([*run_routes, *review_routes]))


@pytest.fixture(autouse=True)
def check_every_second(settings: Any) -> None:
    settings.FORGE_WS_ACCESS_CHECK_SECONDS = 1.0


@pytest.fixture(autouse=True)
def fresh_channel_layer() -> Any:
    """A channel layer of this test's event loop: a Redis layer (REDIS_URL set) refuses to
    receive on a second loop while a listener of an earlier test's loop never finished."""
    from channels.layers import channel_layers

    channel_layers.backends.clear()
    yield
    channel_layers.backends.clear()


@database_sync_to_async
def _run(author: Any, approver: Any) -> Run:
    version = approved_version(author, approver, STEPS)
    return Run.objects.create(plan=version.plan, version=version, status="running",
                              started_by=author)  # fmt: skip


@database_sync_to_async
def _append(run: Run, count: int = 1) -> int:
    """Commit ``count`` events after the run's last one, as a worker would."""
    from runs import publish

    run.refresh_from_db()
    first = run.last_seq + 1
    RunEvent.objects.bulk_create(
        RunEvent(
            run=run,
            seq=seq,
            plan_id=str(run.plan_id),
            plan_version=1,
            event_type="step_ready",
            step_id="wait",
            step_status="ready",
            created_at=timezone.now(),
        )  # fmt: skip
        for seq in range(first, first + count)
    )
    Run.objects.filter(pk=run.pk).update(last_seq=first + count - 1)
    publish.run_changed(run.pk, first + count - 1)
    return first + count - 1


def _session_cookie(user: Any) -> tuple[Client, bytes]:
    client = Client()
    client.force_login(user)
    name = django_settings.SESSION_COOKIE_NAME
    return client, f"{name}={client.cookies[name].value}".encode()


async def _open(path: str, header: tuple[bytes, bytes]) -> WebsocketCommunicator:
    socket = WebsocketCommunicator(APP, path, headers=[header])
    # Not the communicator's default of 1 s: on a loaded machine one of a crowd's thirty
    # connections (each checks its credential in the database) once took longer.
    connected, _ = await socket.connect(timeout=10)
    assert connected
    return socket


def _bearer(token: str) -> tuple[bytes, bytes]:
    return (b"authorization", f"Bearer {token}".encode())


async def _first_event(socket: WebsocketCommunicator) -> dict[str, Any]:
    return json.loads(await socket.receive_from(timeout=5))


async def _until_closed(socket: WebsocketCommunicator, run: Run | None = None) -> dict[str, Any]:
    """Read until the socket closes (appending an event to ``run`` every 0.2 s meanwhile,
    as a live run would); return what happened: the close code, how long it took, and
    the events sent after the change."""
    started = time.monotonic()
    next_event = started
    events: list[int] = []
    while time.monotonic() - started < PROMISE + 3:
        if run is not None and time.monotonic() >= next_event:
            await _append(run)
            next_event += 0.2
        # receive_output's timeout would cancel the application: look first.
        if await socket.receive_nothing(timeout=0.1):
            continue
        message = await socket.receive_output(timeout=1)
        if message["type"] == "websocket.close":
            return {
                "code": message.get("code"),
                "seconds": time.monotonic() - started,
                "events": events,
            }
        data = json.loads(message["text"])
        events += [e["seq"] for e in (data if isinstance(data, list) else [data])]
    raise AssertionError(f"still open after {PROMISE + 3} s, having sent {len(events)} events")


async def _assert_silent_after_close(socket: WebsocketCommunicator) -> None:
    assert await socket.receive_nothing(timeout=0.5)


# --- A token revoked ---------------------------------------------------------------------


async def test_a_run_stream_closes_4403_at_once_when_its_token_is_revoked_here(
    author, approver, viewer, token_for
):
    run = await _run(author, approver)
    await _append(run)
    token = await sync_to_async(token_for)(viewer)
    socket = await _open(f"/ws/runs/{run.pk}/", _bearer(token))
    assert (await _first_event(socket))["seq"] == 1

    stored = await database_sync_to_async(ApiToken.objects.get)(user=viewer)
    await database_sync_to_async(account_services.revoke_token)(stored, actor="viewer")
    closed = await _until_closed(socket)

    assert closed["code"] == 4403
    assert closed["seconds"] < 1.0  # the wake-up, not the periodic check
    assert closed["events"] == []
    await _assert_silent_after_close(socket)


async def test_a_run_stream_closes_4403_within_5_s_when_its_token_is_revoked_elsewhere(
    author, approver, viewer, token_for
):
    """Revoked by another process without Redis: no wake-up reaches this one."""
    run = await _run(author, approver)
    await _append(run)
    token = await sync_to_async(token_for)(viewer)
    socket = await _open(f"/ws/runs/{run.pk}/", _bearer(token))
    await _first_event(socket)

    await database_sync_to_async(
        lambda: ApiToken.objects.filter(user=viewer).update(revoked_at=timezone.now())
    )()
    closed = await _until_closed(socket, run)

    assert closed["code"] == 4403
    assert closed["seconds"] < PROMISE
    await _assert_silent_after_close(socket)


async def test_an_inbox_socket_closes_too_when_its_token_is_revoked(viewer, token_for):
    token = await sync_to_async(token_for)(viewer)
    socket = await _open("/ws/inbox/", _bearer(token))
    assert json.loads(await socket.receive_from(timeout=5)) == {"unread": 0}

    stored = await database_sync_to_async(ApiToken.objects.get)(user=viewer)
    await database_sync_to_async(account_services.revoke_token)(stored, actor="viewer")

    assert (await _until_closed(socket))["code"] == 4403


async def test_other_tokens_of_the_same_person_keep_their_sockets(
    author, approver, viewer, token_for
):
    run = await _run(author, approver)
    await _append(run)
    kept = await sync_to_async(token_for)(viewer, "kept")
    revoked = await sync_to_async(token_for)(viewer, "revoked")
    staying = await _open(f"/ws/runs/{run.pk}/", _bearer(kept))
    leaving = await _open(f"/ws/runs/{run.pk}/", _bearer(revoked))
    await _first_event(staying)
    await _first_event(leaving)

    stored = await database_sync_to_async(ApiToken.objects.get)(user=viewer, name="revoked")
    await database_sync_to_async(account_services.revoke_token)(stored, actor="viewer")
    assert (await _until_closed(leaving))["code"] == 4403
    await asyncio.sleep(1.5)  # past a periodic check
    await _append(run)

    assert (await _first_event(staying))["seq"] == 2
    await staying.disconnect()


# --- Logging out ----------------------------------------------------------------------------


async def test_a_run_stream_of_a_session_closes_4403_when_its_person_logs_out(
    author, approver, viewer
):
    run = await _run(author, approver)
    await _append(run)
    browser, cookie = await sync_to_async(_session_cookie)(viewer)
    socket = await _open(f"/ws/runs/{run.pk}/", (b"cookie", cookie))
    await _first_event(socket)

    logged_out = await sync_to_async(browser.post)("/accounts/logout/")
    assert logged_out.status_code == 302
    closed = await _until_closed(socket, run)

    assert closed["code"] == 4403
    assert closed["seconds"] < PROMISE
    await _assert_silent_after_close(socket)


async def test_a_session_ended_elsewhere_closes_its_sockets_within_5_s(author, approver, viewer):
    """The session row deleted without a signal (expired sessions cleared, another process)."""
    from django.contrib.sessions.models import Session

    run = await _run(author, approver)
    await _append(run)
    _, cookie = await sync_to_async(_session_cookie)(viewer)
    socket = await _open(f"/ws/runs/{run.pk}/", (b"cookie", cookie))
    await _first_event(socket)

    await database_sync_to_async(lambda: Session.objects.all().delete())()
    closed = await _until_closed(socket, run)

    assert (closed["code"], closed["seconds"] < PROMISE) == (4403, True)


# --- Losing a role ------------------------------------------------------------------------


async def test_a_run_stream_closes_4403_when_its_person_loses_the_role_to_watch_runs(
    author, approver, viewer, token_for
):
    run = await _run(author, approver)
    await _append(run)
    token = await sync_to_async(token_for)(viewer)
    runs = await _open(f"/ws/runs/{run.pk}/", _bearer(token))
    inbox = await _open("/ws/inbox/", _bearer(token))
    await _first_event(runs)
    await inbox.receive_from(timeout=5)

    await database_sync_to_async(account_services.save_user)(
        "viewer", actor="admin", roles=["auditor"]
    )
    closed = await _until_closed(runs)

    assert closed["code"] == 4403
    assert closed["seconds"] < 1.0
    # The inbox needs no role, only a login: it stays open.
    assert await inbox.receive_nothing(timeout=1.5)
    await inbox.disconnect()


async def test_a_role_taken_away_elsewhere_closes_the_stream_within_5_s(
    author, approver, viewer, token_for
):
    run = await _run(author, approver)
    await _append(run)
    token = await sync_to_async(token_for)(viewer)
    socket = await _open(f"/ws/runs/{run.pk}/", _bearer(token))
    await _first_event(socket)

    await database_sync_to_async(lambda: User.objects.filter(pk=viewer.pk).update(roles=[]))()
    closed = await _until_closed(socket, run)

    assert (closed["code"], closed["seconds"] < PROMISE) == (4403, True)


async def test_a_deactivated_person_loses_every_socket(viewer, token_for):
    token = await sync_to_async(token_for)(viewer)
    socket = await _open("/ws/inbox/", _bearer(token))
    await socket.receive_from(timeout=5)

    await database_sync_to_async(
        lambda: User.objects.filter(pk=viewer.pk).update(is_active=False)
    )()

    assert (await _until_closed(socket))["code"] == 4403


# --- What the checks cost -------------------------------------------------------------------


async def test_a_crowd_on_one_credential_costs_one_check_per_interval_not_one_per_socket(
    author, approver, viewer, token_for, monkeypatch
):
    from accounts import sockets as socket_access

    checked: list[int] = []
    real = socket_access.holders

    def counted(credentials: Any) -> Any:
        checked.append(len(credentials))
        return real(credentials)

    monkeypatch.setattr(socket_access, "holders", counted)
    run = await _run(author, approver)
    await _append(run)
    token = await sync_to_async(token_for)(viewer)
    crowd = [await _open(f"/ws/runs/{run.pk}/", _bearer(token)) for _ in range(30)]
    for socket in crowd:
        await _first_event(socket)

    await asyncio.sleep(2.5)

    assert 1 <= len(checked) <= 4  # a round a second, each of the one credential
    assert set(checked) == {1}
    for socket in crowd:
        await socket.disconnect()


# --- Through Redis ----------------------------------------------------------------------------


@pytest.mark.requires("redis")
async def test_through_redis_the_wake_up_closes_the_stream_at_once_beside_a_run_feed(
    author, approver, viewer, token_for, settings
):
    """A process's run feeds and its guard both listen on a Redis layer: the guard's
    wake-up must not wait behind the feeds' blocking read (channels_redis reads the
    process-local channels of one prefix in one loop; another prefix waited up to 5 s)."""
    import os
    import uuid

    from redis import Redis

    url = os.environ.get("REDIS_URL") or "redis://127.0.0.1:6379/0"
    prefix = f"forge-test-{uuid.uuid4().hex}"
    settings.CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {"hosts": [url], "prefix": prefix},
        }
    }
    settings.FORGE_WS_ACCESS_CHECK_SECONDS = 4.0  # the periodic check stays out of it
    run = await _run(author, approver)
    await _append(run)
    token = await sync_to_async(token_for)(viewer)
    socket = await _open(f"/ws/runs/{run.pk}/", _bearer(token))
    await _first_event(socket)
    await asyncio.sleep(0.5)  # the feed's listener is in its blocking read

    stored = await database_sync_to_async(ApiToken.objects.get)(user=viewer)
    try:
        await database_sync_to_async(account_services.revoke_token)(stored, actor="viewer")
        closed = await _until_closed(socket)
    finally:  # this test's keys only (the layer's flush would close other loops' pools)
        redis = Redis.from_url(url)
        await sync_to_async(lambda: [redis.delete(k) for k in redis.scan_iter(f"{prefix}*")])()

    assert (closed["code"], closed["seconds"] < 1.5) == (4403, True)
