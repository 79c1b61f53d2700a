"""The audit page: permissions, filters, keyset pages, escaping, exports, the chain's state
from checkpoints, the full walk on demand, and the bulk loader the seeding command uses."""

from __future__ import annotations

import io
import json
import re
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection, transaction

from audit import browse, services
from audit.browse import Filters
from audit.models import AppendOnlyError, AuditEvent, ChainCheckpoint
from audit.services import LoadedEvent, bulk_load_chain, record, verify

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


def tamper(sql, params=()):
    with transaction.atomic(), connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                "ALTER TABLE audit_auditevent DISABLE TRIGGER audit_auditevent_append_only"
            )
        cursor.execute(sql, params)
        if connection.vendor == "postgresql":
            cursor.execute(
                "ALTER TABLE audit_auditevent ENABLE TRIGGER audit_auditevent_append_only"
            )


def load(count, *, start=T0, step=timedelta(minutes=1), actor=lambda n: "alice", **fields):
    """``count`` events one ``step`` apart from ``start`` (seq n+1 holds payload n)."""
    events = (
        LoadedEvent(
            start + n * step,
            actor(n),
            fields.get("action", "thing.done"),
            fields.get("object_type", "thing"),
            str(n),
            {"n": n},
        )
        for n in range(count)
    )
    return bulk_load_chain(events)


def seqs(response):
    return [int(s) for s in re.findall(rb'<tr data-seq="(\d+)"', response.content)]


def _quiet_login(session_client, user):
    """``user`` logged in without the login's own audit event, so seqs are the test's."""
    from django.contrib.auth.signals import user_logged_in

    from forge_web.audit_hooks import audit_login

    user_logged_in.disconnect(dispatch_uid="forge_web.audit_logged_in")
    try:
        return session_client(user)
    finally:
        user_logged_in.connect(audit_login, dispatch_uid="forge_web.audit_logged_in")


@pytest.fixture
def client(session_client, viewer):
    """The viewer, logged in quietly: reads the trail, may not walk the whole chain."""
    return _quiet_login(session_client, viewer)


@pytest.fixture
def walker(session_client, operator):
    """An operator, logged in quietly: holds audit.verify, so may walk the whole chain."""
    walker = _quiet_login(session_client, operator)
    walker.get("/audit/")  # the CSRF cookie
    return walker


def post_verify(client, **data):
    return client.post(
        "/audit/verify/", {"csrfmiddlewaretoken": client.cookies["csrftoken"].value, **data}
    )


# --- Who may see it ---------------------------------------------------------------------


def test_the_page_needs_a_login(anonymous_client):
    response = anonymous_client.get("/audit/")

    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")


def test_the_page_needs_the_audit_view_permission(session_client, stranger):
    response = session_client(stranger).get("/audit/")

    assert response.status_code == 403
    assert b"audit.view" in response.content


@pytest.mark.parametrize("role", ["viewer", "author", "approver", "operator", "admin", "auditor"])
def test_every_role_may_read_the_trail(session_client, make_user, role):
    assert session_client(make_user(f"a-{role}", role)).get("/audit/").status_code == 200


def test_verifying_needs_a_post_and_the_audit_verify_permission(session_client, client, viewer):
    assert session_client(viewer).get("/audit/verify/").status_code == 405
    page = client.get("/audit/")

    response = post_verify(client)

    assert response.status_code == 403
    assert b"audit.verify" in response.content
    assert ChainCheckpoint.objects.count() == 0
    assert b'id="verify-all"' not in page.content
    assert b"Operators, auditors and admins can walk the whole chain." in page.content


def test_operators_see_the_verify_button(walker):
    assert b'id="verify-all"' in walker.get("/audit/").content


# --- Rows, filters and pages ------------------------------------------------------------


def test_events_are_listed_newest_first_with_their_columns(client):
    load(3)

    response = client.get("/audit/")

    assert response.status_code == 200
    assert seqs(response) == [3, 2, 1]
    assert b"3 events" in response.content
    assert b"2026-03-01 09:02:00" in response.content


def test_every_text_of_an_event_is_escaped(client):
    record(
        "<b>eve</b>",
        "x.<script>alert(1)</script>",
        "t<i>",
        "<img src=x>",
        {"note": "<script>alert('payload')</script>", "<key>": "&"},
    )

    body = client.get("/audit/").content.decode()

    assert "<script>alert" not in body and "<img src=x>" not in body and "<b>eve" not in body
    assert "&lt;script&gt;alert(&#x27;payload&#x27;)&lt;/script&gt;" in body
    assert "&lt;b&gt;eve&lt;/b&gt;" in body


def test_the_payload_is_shown_whole_and_pretty_printed(client):
    record("alice", "plan.created", "plan", 7, {"name": "Report", "steps": [1, 2]})

    body = client.get("/audit/").content.decode()

    assert '<pre class="json">{\n  &quot;name&quot;: &quot;Report&quot;,' in body
    assert "name: Report · steps: [1, 2]" in body


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("actor=bob", [6, 4, 2]),
        ("action=thing.done", [4, 3, 2, 1]),
        ("object_type=plan", [6, 5]),
        ("object_type=plan&object_id=5", [6]),
        ("since=2026-03-01T09:02&until=2026-03-01T09:04", [4, 3]),
        ("actor=bob&since=2026-03-01T09:03", [6, 4]),
        ("until=2026-03-01T09:01:00", [1]),
    ],
)
def test_filters_narrow_the_rows(client, query, expected):
    load(4, actor=lambda n: "bob" if n % 2 else "alice")
    bulk_load_chain(
        LoadedEvent(T0 + timedelta(minutes=m), who, "plan.created", "plan", str(m), {})
        for m, who in ((4, "alice"), (5, "bob"))
    )

    response = client.get(f"/audit/?{query}")

    assert seqs(response) == expected
    assert f"{len(expected)} event".encode() in response.content


def test_a_time_filter_is_exact_even_when_times_go_backwards(client):
    # Seq order is not time order here: rows 3 and 4 are older than rows 1 and 2.
    bulk_load_chain(
        LoadedEvent(T0 + timedelta(minutes=m), "alice", "thing.done", "thing", str(m), {})
        for m in (10, 11, 1, 2, 12)
    )

    assert seqs(client.get("/audit/?since=2026-03-01T09:05")) == [5, 2, 1]
    assert seqs(client.get("/audit/?until=2026-03-01T09:05")) == [4, 3]


def test_bad_filters_say_what_is_wrong_and_list_nothing(client):
    load(2)

    response = client.get("/audit/?since=2026-03-02T00:00&until=2026-03-01T00:00")

    assert response.status_code == 200
    assert b"Until must be after since." in response.content
    assert seqs(response) == []
    assert b"Enter a valid date/time." in client.get("/audit/?since=yesterday").content


def test_pages_follow_seq_both_ways(client, monkeypatch):
    monkeypatch.setattr(browse, "PAGE_SIZE", 4)
    load(10)

    first = client.get("/audit/")
    assert seqs(first) == [10, 9, 8, 7]
    assert b'href="?before=7"' in first.content and b"page-newer" not in first.content

    second = client.get("/audit/?before=7")
    assert seqs(second) == [6, 5, 4, 3]
    assert b'href="?after=6"' in second.content and b'href="?before=3"' in second.content

    last = client.get("/audit/?before=3")
    assert seqs(last) == [2, 1]
    assert b"page-older" not in last.content

    back = client.get("/audit/?after=2")
    assert seqs(back) == [6, 5, 4, 3]
    assert b'href="?after=6"' in back.content and b'href="?before=3"' in back.content
    assert seqs(client.get("/audit/?after=6")) == [10, 9, 8, 7]


def test_pages_keep_the_filters(client, monkeypatch):
    monkeypatch.setattr(browse, "PAGE_SIZE", 2)
    load(8, actor=lambda n: "bob" if n % 2 else "alice")

    response = client.get("/audit/?actor=bob")

    assert seqs(response) == [8, 6]
    assert b'href="?actor=bob&amp;before=6"' in response.content
    assert seqs(client.get("/audit/?actor=bob&before=6")) == [4, 2]


def test_going_to_a_seq_shows_it_first_and_marks_it(client):
    load(60)

    response = client.get("/audit/?seq=42")

    assert seqs(response)[:2] == [42, 41]
    assert b'<tr data-seq="42" class=" target' in response.content


def test_nonsense_cursors_are_ignored(client):
    load(3)

    for query in ("before=abc", "after=-1", "before=99999999999999999999", "seq=0"):
        assert seqs(client.get(f"/audit/?{query}")) == [3, 2, 1]


def test_counts_stop_at_the_cap(client, monkeypatch):
    monkeypatch.setattr(browse, "COUNT_CAP", 5)
    load(8)

    assert b"8 events" in client.get("/audit/").content  # unfiltered: the newest seq
    assert b"More than 5 events match" in client.get("/audit/?actor=alice").content
    assert browse.page(Filters(actor="alice")).count == 5


def test_a_row_links_to_its_actor_action_and_object(client):
    record("ada", "plan.created", "plan", 7, {})

    body = client.get("/audit/?since=2000-01-01T00:00").content.decode()

    assert 'href="?actor=ada&amp;since=2000-01-01T00%3A00%3A00"' in body
    assert 'href="?action=plan.created&amp;since=2000-01-01T00%3A00%3A00"' in body
    assert 'href="?object_type=plan&amp;object_id=7&amp;since=2000-01-01T00%3A00%3A00"' in body


# --- Exports ----------------------------------------------------------------------------


def test_the_export_links_export_the_filtered_view_for_the_logged_in_user(client):
    load(4, actor=lambda n: "bob" if n % 2 else "alice")
    page = client.get("/audit/?actor=bob&since=2026-03-01T09:00").content.decode()
    jsonl = re.search(r'id="export-jsonl" href="([^"]+)"', page).group(1).replace("&amp;", "&")
    csv_url = re.search(r'id="export-csv" href="([^"]+)"', page).group(1).replace("&amp;", "&")

    lines = b"".join(client.get(jsonl).streaming_content).decode().splitlines()
    rows = b"".join(client.get(csv_url).streaming_content).decode().splitlines()

    assert [json.loads(line)["seq"] for line in lines] == [2, 4]
    assert rows[0].startswith("seq,at,actor") and [r.split(",")[0] for r in rows[1:]] == ["2", "4"]


# --- The chain's state ------------------------------------------------------------------


def banner(response):
    match = re.search(rb'<section class="chain-state"[^>]*data-state="(\w+)"', response.content)
    return match.group(1).decode()


def test_an_intact_chain_is_verified_through_its_newest_row(client):
    load(5)

    response = client.get("/audit/")

    assert banner(response) == "ok"
    assert b"Chain verified through seq 5" in response.content


def test_the_page_walks_only_the_rows_after_the_latest_checkpoint(client, monkeypatch):
    monkeypatch.setattr(services, "CHECKPOINT_MIN_ROWS", 3)
    load(5)
    client.get("/audit/")  # walks 1..5 and keeps a checkpoint
    assert list(ChainCheckpoint.objects.values_list("kind", "from_seq", "through_seq")) == [
        ("incremental", 1, 5)
    ]
    load(4)

    state = services.chain_state()

    assert (state.ok, state.verified_through, state.head, state.walked_now) == (True, 9, 9, 4)
    assert ChainCheckpoint.objects.first().from_seq == 6


def test_a_long_tail_is_walked_a_bounded_number_of_rows_per_view(client, monkeypatch):
    monkeypatch.setattr(services, "STATE_WALK_LIMIT", 4)
    monkeypatch.setattr(services, "CHECKPOINT_MIN_ROWS", 1)
    load(10)

    response = client.get("/audit/")

    assert banner(response) == "pending"
    assert b"Chain verified through seq 4" in response.content
    assert b"6 newer rows (to seq 10) not checked yet" in response.content
    assert services.chain_state().verified_through == 8
    assert services.chain_state().verified_through == 10


def test_a_broken_row_is_named_with_its_reason_and_marked(client):
    load(5)
    tamper("UPDATE audit_auditevent SET payload = %s WHERE seq = 3", ['{"n":30}'])

    response = client.get("/audit/")

    assert banner(response) == "broken"
    assert b"Chain broken at seq 3" in response.content
    assert b"hash does not match the row&#x27;s content" in response.content
    assert b'<tr data-seq="3" class="broken' in response.content
    assert b'href="?seq=3"' in response.content


def test_a_checkpointed_row_that_changed_since_is_caught_without_a_full_walk(monkeypatch):
    monkeypatch.setattr(services, "CHECKPOINT_MIN_ROWS", 1)
    load(5)
    assert services.chain_state().verified_through == 5
    # Rewrite row 5 and re-hash it, as a tamperer who re-chains the end would.
    tamper("UPDATE audit_auditevent SET hash = %s WHERE seq = 5", ["f" * 64])

    state = services.chain_state()

    assert (state.ok, state.broken_at) == (False, 5)
    assert state.reason.startswith("row 5 changed since it was verified")
    assert services.chain_state().broken_at == 5  # and it stays broken


def test_an_edit_before_the_checkpoint_shows_in_a_full_walk(walker, monkeypatch):
    monkeypatch.setattr(services, "CHECKPOINT_MIN_ROWS", 1)
    load(5)
    walker.get("/audit/")
    tamper("UPDATE audit_auditevent SET payload = %s WHERE seq = 2", ['{"n":20}'])
    assert banner(walker.get("/audit/")) == "ok"  # incremental: cannot see it

    response = walker.post(
        "/audit/verify/", {"csrfmiddlewaretoken": walker.cookies["csrftoken"].value}, follow=True
    )

    assert banner(response) == "broken"
    assert (
        b"The chain is broken at seq 2: hash does not match the row&#x27;s content."
        in response.content
    )


def test_the_whole_chain_is_walked_on_demand_and_kept_as_a_checkpoint(walker):
    load(7)
    walker.get("/audit/?actor=alice")

    response = post_verify(walker, query="actor=alice")

    assert response.status_code == 302
    assert response["Location"] == "/audit/?actor=alice"
    walk = services.latest_full_walk()
    assert (walk.from_seq, walk.through_seq, walk.rows, walk.ok) == (1, 7, 7, True)
    page = walker.get(response["Location"])
    assert b"Walked the whole chain: 7 rows intact" in page.content
    assert b"Last full walk" in page.content


def test_a_second_full_walk_within_the_interval_is_not_started(walker, settings):
    settings.FORGE_AUDIT_VERIFY_INTERVAL = 60
    load(3)
    post_verify(walker)
    walks = ChainCheckpoint.objects.filter(kind="full").count()

    response = walker.post(
        "/audit/verify/", {"csrfmiddlewaretoken": walker.cookies["csrftoken"].value}, follow=True
    )

    assert ChainCheckpoint.objects.filter(kind="full").count() == walks == 1
    assert b"The whole chain was walked just now: see below." in response.content


def test_the_api_and_the_command_keep_their_full_walks_for_the_page(api_client, operator):
    from django.core.management import call_command

    load(2)
    api_client(operator).post("/api/v1/audit/verify")
    call_command("forge_audit_verify", stdout=io.StringIO())

    assert list(ChainCheckpoint.objects.values_list("kind", "through_seq")) == [
        ("full", 3),
        ("full", 3),
    ]  # the API call's own token event is seq 3


# --- The bulk loader --------------------------------------------------------------------


def test_bulk_loading_appends_a_chain_that_verifies_after_the_rows_there():
    record("alice", "thing.done", "thing", 1, {})

    assert load(250, action="thing.loaded") == 250
    assert verify() == services.Verification(ok=True, verified_through=251, broken_at=None)
    assert record("alice", "thing.done", "thing", 2, {}).seq == 252
    assert verify().verified_through == 252


def test_bulk_loading_hashes_and_stores_exactly_as_record_does():
    payload = {"big": 1e300, "neg_zero": -0.0, "é": [1, 2.5, None], "at": T0}
    bulk_load_chain([LoadedEvent(T0, "alice", "thing.done", "thing", "1", payload)])
    loaded = AuditEvent.objects.get()

    assert loaded.payload == {
        "big": 1e300,
        "neg_zero": -0.0,
        "é": [1, 2.5, None],
        "at": "2026-03-01T09:00:00.000000+00:00",
    }
    assert loaded.hash == loaded.expected_hash()


def test_bulk_loading_redacts_secrets():
    bulk_load_chain([LoadedEvent(T0, "alice", "token.created", "token", "1", {"token": "s3cret"})])

    assert AuditEvent.objects.get().payload == {"token": "[redacted]"}


def test_the_model_still_refuses_bulk_create():
    with pytest.raises(AppendOnlyError):
        AuditEvent.objects.bulk_create([])
