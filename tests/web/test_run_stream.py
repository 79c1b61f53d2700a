"""The live event stream for a crowd: one reader per run reads and encodes each event once
for every watcher; watchers get every event after their seq, in order, with no gap and no
duplicate; a watcher that falls behind is closed (4408) and catches up when it
reconnects; refusals close with codes the page understands."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator
from django.utils import timezone

from runs import feed as feed_module
from runs import publish
from runs.consumers import RunEventsConsumer
from runs.models import Run, RunEvent

from .runs_helpers import approved_version

pytestmark = pytest.mark.django_db(transaction=True)

STEPS = [{"id": "wait", "description": "Wait for the supplier's answer", "tool": "noop"}]


@database_sync_to_async
def _run(author: Any, approver: Any) -> Run:
    version = approved_version(author, approver, STEPS)
    return Run.objects.create(plan=version.plan, version=version, status="running",
                              started_by=author)  # fmt: skip


@database_sync_to_async
def _append(run: Run, count: int) -> int:
    """Commit ``count`` events after the run's last one, as a worker would; wake feeds."""
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


async def _watch(run: Run, user: Any, after: int = 0) -> WebsocketCommunicator:
    communicator = WebsocketCommunicator(RunEventsConsumer.as_asgi(), f"/ws/runs/{run.pk}/")
    communicator.scope["user"] = user
    communicator.scope["url_route"] = {"kwargs": {"run_id": run.pk}}
    communicator.scope["query_string"] = f"after={after}".encode()
    before = _watchers(run)
    connected, _ = await communicator.connect()
    assert connected
    # Accepted first, the consumer then checks and joins the run's feed: wait for that.
    for _ in range(500):
        if _watchers(run) > before:
            return communicator
        await asyncio.sleep(0.01)
    raise AssertionError("the watcher never joined the run's feed")


def _watchers(run: Run) -> int:
    feed = feed_module.hub().feeds.get(run.pk)
    return 0 if feed is None else len(feed.watchers)


async def _seqs(communicator: WebsocketCommunicator, count: int) -> list[int]:
    seqs: list[int] = []
    while len(seqs) < count:
        data = json.loads(await communicator.receive_from(timeout=5))
        seqs += [event["seq"] for event in (data if isinstance(data, list) else [data])]
    return seqs


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int]]:
    """Every database read of new events, as (after seq, events read)."""
    seen: list[tuple[int, int]] = []
    real = feed_module.events_after

    def counted(run_id: int, seq: int) -> list[tuple[int, str]]:
        frames = real(run_id, seq)
        seen.append((seq, len(frames)))
        return frames

    monkeypatch.setattr(feed_module, "events_after", counted)
    return seen


@pytest.mark.asyncio
async def test_a_watcher_gets_the_events_after_its_seq_then_live_ones_in_order(
    author, approver, viewer
):
    run = await _run(author, approver)
    await _append(run, 3)

    watcher = await _watch(run, viewer, after=1)
    await _append(run, 2)

    assert await _seqs(watcher, 4) == [2, 3, 4, 5]
    assert await watcher.receive_nothing(timeout=0.3)
    await watcher.disconnect()


@pytest.mark.asyncio
async def test_a_crowd_of_watchers_costs_one_read_per_event_not_one_per_watcher(
    author, approver, viewer, reads
):
    run = await _run(author, approver)
    crowd = [await _watch(run, viewer) for _ in range(50)]

    await _append(run, 10)
    received = [await _seqs(watcher, 10) for watcher in crowd]

    assert received == [list(range(1, 11))] * 50
    assert sum(count for _, count in reads) == 10  # each event read (and encoded) once
    for watcher in crowd:
        await watcher.disconnect()


@pytest.mark.asyncio
async def test_watchers_close_behind_catch_up_from_memory_and_far_behind_from_the_database(
    author, approver, viewer, reads
):
    run = await _run(author, approver)
    first = await _watch(run, viewer)
    await _append(run, 5)
    assert await _seqs(first, 5) == [1, 2, 3, 4, 5]
    read_before = len(reads)

    close = await _watch(run, viewer, after=3)
    assert await _seqs(close, 2) == [4, 5]
    assert len(reads) == read_before  # from the feed's memory

    feed_module.hub().feeds[run.pk].recent.clear()  # as if the feed had moved far on
    far = await _watch(run, viewer, after=1)
    assert await _seqs(far, 4) == [2, 3, 4, 5]
    assert (1, 4) in reads[read_before:]  # its own one read of the backlog
    for watcher in (first, close, far):
        await watcher.disconnect()


def test_a_watcher_that_falls_behind_is_dropped_without_holding_the_others_back():
    feed = feed_module.RunFeed(run_id=1, last_seq=0)
    slow = feed.subscribe(0, queue_size=10).watcher
    brisk = feed.subscribe(0, queue_size=100).watcher

    feed.publish((seq, f'{{"seq": {seq}}}') for seq in range(1, 31))

    assert slow.lagging and slow not in feed.watchers
    assert slow.queue.qsize() == 1 and slow.queue.get_nowait() is None  # "reconnect"
    assert [brisk.queue.get_nowait()[0] for _ in range(30)] == list(range(1, 31))
    assert feed.watchers == {brisk}


def test_a_frame_is_one_shared_string_however_many_watch():
    feed = feed_module.RunFeed(run_id=1, last_seq=0)
    watchers = [feed.subscribe(0, queue_size=10).watcher for _ in range(3)]

    feed.publish([(1, '{"seq": 1}')])

    frames = [watcher.queue.get_nowait()[1] for watcher in watchers]
    assert frames[0] is frames[1] is frames[2]


@pytest.mark.asyncio
async def test_a_lagging_watcher_is_told_to_reconnect_with_close_code_4408(
    author, approver, viewer, settings
):
    settings.FORGE_WS_WATCHER_QUEUE = 10
    run = await _run(author, approver)
    watcher = await _watch(run, viewer)
    [subscribed] = feed_module.hub().feeds[run.pk].watchers

    subscribed.stop()

    assert await watcher.receive_output(timeout=5) == {"type": "websocket.close", "code": 4408}


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("who", "path_run", "after", "code"),
    [("anonymous", "run", "0", 4403), ("stranger", "run", "0", 4403),
     ("auditor", "run", "0", 4403),
     ("viewer", "missing", "0", 4404), ("viewer", "run", "x", 4400)],
    ids=["anonymous", "no role", "auditor (no run.view)", "no such run", "bad after"],
)  # fmt: skip
async def test_refusals_close_after_the_handshake_with_a_code_the_page_understands(
    who, path_run, after, code, author, approver, viewer, stranger, auditor
):
    from django.contrib.auth.models import AnonymousUser

    run = await _run(author, approver)
    people = {"anonymous": AnonymousUser(), "stranger": stranger, "viewer": viewer}
    user = {**people, "auditor": auditor}[who]
    run_id = run.pk if path_run == "run" else run.pk + 1000
    communicator = WebsocketCommunicator(RunEventsConsumer.as_asgi(), f"/ws/runs/{run_id}/")
    communicator.scope["user"] = user
    communicator.scope["url_route"] = {"kwargs": {"run_id": run_id}}
    communicator.scope["query_string"] = f"after={after}".encode()

    connected, _ = await communicator.connect()

    assert connected  # accepted first: the handshake never waits on the database
    assert await communicator.receive_output(timeout=5) == {"type": "websocket.close", "code": code}


@pytest.mark.asyncio
async def test_events_ready_at_once_leave_in_one_message_as_an_array(author, approver, viewer):
    run = await _run(author, approver)
    watcher = await _watch(run, viewer)

    await _append(run, 3)  # committed together, read together
    message = json.loads(await watcher.receive_from(timeout=5))

    assert [event["seq"] for event in message] == [1, 2, 3]
    await watcher.disconnect()


@pytest.mark.asyncio
async def test_a_watcher_is_told_to_come_back_later_while_the_database_is_away(
    author, approver, viewer, monkeypatch, caplog
):
    import logging

    import psycopg
    from django.db import OperationalError

    from accounts.outages import DATABASE
    from runs import consumers

    run = await _run(author, approver)

    async def refused(run_id: int) -> bool:
        raise OperationalError("connection refused") from psycopg.OperationalError("refused")

    monkeypatch.setattr(consumers, "run_exists", refused)
    caplog.set_level(logging.INFO)
    DATABASE.recovered()
    closes = []
    for _ in range(3):
        communicator = WebsocketCommunicator(RunEventsConsumer.as_asgi(), f"/ws/runs/{run.pk}/")
        communicator.scope["user"] = viewer
        communicator.scope["url_route"] = {"kwargs": {"run_id": run.pk}}
        await communicator.connect()
        closes.append(await communicator.receive_output(timeout=5))
    DATABASE.recovered()

    assert closes == [{"type": "websocket.close", "code": 1013}] * 3
    assert len([r for r in caplog.records if r.name == "forge.outages"]) == 2  # away, back
    assert not [r for r in caplog.records if r.exc_info]
