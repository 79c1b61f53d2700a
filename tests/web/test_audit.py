"""The audit trail: the hash chain, verify, append-only, redaction, exports and the API."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import threading
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from django.core.management import CommandError, call_command
from django.db import DatabaseError, connection, connections, transaction

from accounts import tokens as token_format
from audit import chain, services
from audit.models import AppendOnlyError, AuditEvent
from audit.services import Verification, record, verify

pytestmark = pytest.mark.django_db

GENESIS = "0" * 64


def tamper(sql, params=()):
    """Change rows behind the application's back, as an attacker with database access would."""
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


def three_events():
    return [record("alice", f"thing.step{n}", "thing", n, {"n": n}) for n in (1, 2, 3)]


# --- The chain --------------------------------------------------------------------------


def test_the_first_event_hashes_the_canonical_json_after_sixty_four_zeros():
    event = record(
        "alice", "plan.created", "plan", 7, {"name": "Report", "é": [1, 2.5, None, True]}
    )

    at = event.at.astimezone(UTC).isoformat(timespec="microseconds")
    canonical = (
        '{"action":"plan.created","actor":"alice","at":"' + at + '","object_id":"7",'
        '"object_type":"plan","payload":{"name":"Report","\\u00e9":[1,2.5,null,true]},"seq":1}'
    )
    assert (event.seq, event.prev_hash) == (1, GENESIS)
    assert event.hash == hashlib.sha256((GENESIS + canonical).encode("ascii")).hexdigest()
    assert AuditEvent.objects.get().hash == event.hash


def test_each_event_links_to_the_one_before():
    first, second, third = three_events()

    assert [e.seq for e in AuditEvent.objects.all()] == [1, 2, 3]
    assert (second.prev_hash, third.prev_hash) == (first.hash, second.hash)


def test_an_empty_trail_verifies():
    assert verify() == Verification(ok=True, verified_through=0, broken_at=None)


def test_an_untouched_trail_verifies_through_its_last_event():
    three_events()

    assert verify() == Verification(ok=True, verified_through=3, broken_at=None)


def test_verify_walks_the_trail_in_chunks(monkeypatch):
    monkeypatch.setattr(services, "VERIFY_CHUNK", 3)
    for n in range(10):
        record("alice", "thing.done", "thing", n, {})

    assert verify().verified_through == 10


def test_payload_numbers_survive_the_database_byte_for_byte():
    record(
        "alice",
        "thing.measured",
        "thing",
        1,
        {"big": 1e300, "tiny": 1e-7, "neg_zero": -0.0, "one": 1.0},
    )

    assert verify().ok
    assert AuditEvent.objects.get().payload == {
        "big": 1e300,
        "tiny": 1e-7,
        "neg_zero": -0.0,
        "one": 1.0,
    }


def test_payload_values_json_cannot_write_are_converted_or_refused():
    at = datetime(2025, 1, 31, 9, 5, tzinfo=UTC)

    event = record("alice", "thing.done", "thing", 1, {"at": at, "tags": {"b", "a"}})

    assert event.payload == {"at": "2025-01-31T09:05:00.000000+00:00", "tags": ["a", "b"]}
    with pytest.raises(TypeError, match="JSON values, not object"):
        record("alice", "thing.done", "thing", 1, {"x": object()})
    with pytest.raises(TypeError, match="a dict"):
        record("alice", "thing.done", "thing", 1, ["not", "a", "dict"])


def test_an_event_recorded_in_a_rolled_back_transaction_leaves_no_trace():
    with pytest.raises(RuntimeError), transaction.atomic():
        record("alice", "thing.done", "thing", 1, {})
        raise RuntimeError("the change failed")

    assert AuditEvent.objects.count() == 0
    assert record("alice", "thing.done", "thing", 1, {}).seq == 1


# --- Tampering --------------------------------------------------------------------------


def test_verify_names_a_row_whose_payload_was_changed():
    three_events()
    tamper("UPDATE audit_auditevent SET payload = %s WHERE seq = 2", ['{"n":20}'])

    assert verify() == Verification(
        ok=False,
        verified_through=1,
        broken_at=2,
        reason="hash does not match the row's content",
        code="hash_mismatch",
    )


def test_verify_names_a_row_whose_hash_was_recomputed_by_the_tamperer():
    first, second, third = three_events()
    forged = chain.event_hash(
        prev_hash=first.hash,
        seq=2,
        at=second.at,
        actor="mallory",
        action=second.action,
        object_type="thing",
        object_id="2",
        payload={"n": 2},
    )
    tamper("UPDATE audit_auditevent SET actor = 'mallory', hash = %s WHERE seq = 2", [forged])

    assert verify() == Verification(
        ok=False,
        verified_through=2,
        broken_at=3,
        reason="prev_hash does not match the hash of seq 2",
        code="link_broken",
    )


def test_verify_names_the_row_after_a_deleted_one():
    three_events()
    tamper("DELETE FROM audit_auditevent WHERE seq = 2")

    assert verify() == Verification(
        ok=False,
        verified_through=1,
        broken_at=3,
        reason="seq 3 follows seq 1: rows are missing",
        code="rows_missing",
    )


def test_the_verify_command_fails_on_a_broken_trail():
    three_events()
    out = io.StringIO()
    call_command("forge_audit_verify", stdout=out)
    assert out.getvalue() == "audit chain ok through seq 3\n"
    tamper("UPDATE audit_auditevent SET action = 'x' WHERE seq = 3")

    with pytest.raises(CommandError, match="broken at seq 3"):
        call_command("forge_audit_verify")


# --- Append-only ------------------------------------------------------------------------


def test_the_model_refuses_to_save_an_existing_event():
    event = record("alice", "thing.done", "thing", 1, {})
    event.actor = "mallory"

    with pytest.raises(AppendOnlyError):
        event.save()
    assert AuditEvent.objects.get().actor == "alice"


def test_the_model_refuses_to_delete_an_event():
    event = record("alice", "thing.done", "thing", 1, {})

    with pytest.raises(AppendOnlyError):
        event.delete()
    assert AuditEvent.objects.count() == 1


@pytest.mark.parametrize(
    "change",
    [
        lambda qs: qs.update(actor="mallory"),
        lambda qs: qs.delete(),
        lambda qs: qs.bulk_update(list(qs), ["actor"]),
        lambda qs: qs.bulk_create([AuditEvent(seq=9)]),
        lambda qs: AuditEvent.objects.filter(seq=1).delete(),
    ],
)
def test_querysets_refuse_bulk_changes(change):
    record("alice", "thing.done", "thing", 1, {})

    with pytest.raises(AppendOnlyError):
        change(AuditEvent.objects.all())
    assert AuditEvent.objects.get().actor == "alice"


@pytest.mark.postgres
@pytest.mark.parametrize(
    "sql",
    [
        "UPDATE audit_auditevent SET actor = 'mallory'",
        "DELETE FROM audit_auditevent",
        "TRUNCATE audit_auditevent",
    ],
)
def test_the_postgres_trigger_refuses_raw_changes(sql):
    record("alice", "thing.done", "thing", 1, {})

    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute(sql)
    assert list(AuditEvent.objects.values_list("actor", flat=True)) == ["alice"]


@pytest.mark.postgres
@pytest.mark.parametrize("statement", ["TRUNCATE audit_auditevent", "DELETE FROM audit_auditevent"])
def test_the_application_s_own_role_cannot_lift_the_trigger_with_a_setting(statement):
    """Issue 26, defect 11: any session could ``SET LOCAL forge.audit_allow_truncate``
    and empty the trail. Only a superuser's flush may (who could drop the trigger anyway);
    here the role has every privilege on the table, as an application's often has."""
    record("alice", "thing.done", "thing", 1, {})
    role = f"forge_app_{uuid.uuid4().hex[:12]}"  # roles are the cluster's: a name of its own

    with connection.cursor() as cursor:
        cursor.execute(f"CREATE ROLE {role} NOLOGIN")  # rolled back with the test
        cursor.execute(f"GRANT ALL ON audit_auditevent TO {role}")
        cursor.execute(f"GRANT USAGE ON SCHEMA public TO {role}")
        with pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
            cursor.execute(f"SET LOCAL ROLE {role}")
            cursor.execute("SET LOCAL forge.audit_allow_truncate = 'on'")
            cursor.execute(statement)
    assert list(AuditEvent.objects.values_list("actor", flat=True)) == ["alice"]


@pytest.mark.postgres
def test_flush_may_still_empty_the_trail_on_postgres():
    record("alice", "thing.done", "thing", 1, {})

    call_command("flush", interactive=False, verbosity=0)

    assert AuditEvent.objects.count() == 0


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_concurrent_writers_keep_the_chain_gapless():
    writers, each = 8, 15
    barrier = threading.Barrier(writers)
    errors = []

    def write(worker):
        try:
            barrier.wait()
            for n in range(each):
                with transaction.atomic():
                    record(f"worker{worker}", "thing.done", "thing", n, {"n": n})
        except Exception as exc:  # surfaced by the assertion below
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=write, args=(w,)) for w in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert errors == []
    assert list(AuditEvent.objects.values_list("seq", flat=True)) == list(
        range(1, writers * each + 1)
    )
    assert verify() == Verification(ok=True, verified_through=writers * each, broken_at=None)


# --- Redaction --------------------------------------------------------------------------


def test_secrets_never_reach_the_payload_at_any_depth():
    event = record(
        "alice",
        "tool.configured",
        "tool",
        "http",
        {
            "Password": "hunter2",
            "headers": {"Authorization": "Basic abc", "X-Api-Key": "k", "Set-Cookie": "s=1"},
            "steps": [{"env": {"DB_PASSWORD": "p", "client_secret": "c", "API_KEY": "a"}}],
            "token": "t",
            "access_token": "at",
            "private_key": "-----BEGIN",
            "max_tokens": 200000,
            "note": "curl -H 'Authorization: Bearer abc.def' with forge_0123456789ab_" + "x" * 43,
        },
    )

    assert event.payload == {
        "Password": "[redacted]",
        "headers": {
            "Authorization": "[redacted]",
            "X-Api-Key": "[redacted]",
            "Set-Cookie": "[redacted]",
        },
        "steps": [
            {
                "env": {
                    "DB_PASSWORD": "[redacted]",
                    "client_secret": "[redacted]",
                    "API_KEY": "[redacted]",
                }
            }
        ],
        "token": "[redacted]",
        "access_token": "[redacted]",
        "private_key": "[redacted]",
        "max_tokens": 200000,
        "note": "curl -H 'Authorization: [redacted]' with [redacted]",
    }
    assert AuditEvent.objects.get().payload == event.payload


def test_creating_a_token_through_the_api_audits_no_secret(api_client, author):
    value = (
        api_client(author)
        .post("/api/v1/tokens", {"name": "ci"}, content_type="application/json")
        .json()["token"]
    )

    exported = "".join(json.dumps(e.as_record()) for e in AuditEvent.objects.all())
    _, secret = token_format.parse(value)
    assert secret not in exported


# --- Accounts actions are audited -------------------------------------------------------


def test_token_creation_and_revocation_are_audited_with_the_acting_user(api_client, author):
    client = api_client(author)  # creates the "test" token
    token_id = client.post(
        "/api/v1/tokens", {"name": "ci"}, content_type="application/json"
    ).json()["id"]

    client.post(f"/api/v1/tokens/{token_id}/revoke")

    assert [
        (e.actor, e.action, e.object_id, e.payload["name"]) for e in AuditEvent.objects.all()
    ] == [
        ("author", "token.created", str(token_id - 1), "test"),
        ("author", "token.created", str(token_id), "ci"),
        ("author", "token.revoked", str(token_id), "ci"),
    ]


# --- Exports ----------------------------------------------------------------------------


def _events_for_export():
    record("alice", "plan.created", "plan", 1, {"name": "a"})
    record("bob", "plan.approved", "plan", 1, {})
    record("alice", "run.started", "run", 5, {"plan": 1})


def _body(response):
    return b"".join(response.streaming_content).decode()


def test_export_as_json_lines_carries_every_column_in_seq_order(api_client, viewer):
    client = api_client(viewer)  # writes one event itself (its token)
    _events_for_export()

    response = client.get("/api/v1/audit/export?format=jsonl&actor=alice")

    assert response.status_code == 200
    assert response["Content-Type"] == "application/x-ndjson"
    assert response["Content-Disposition"].startswith('attachment; filename="forge-audit-')
    lines = [json.loads(line) for line in _body(response).splitlines()]
    assert lines == [
        e.as_record() for e in AuditEvent.objects.filter(actor="alice").order_by("seq")
    ]
    assert [line["action"] for line in lines] == ["plan.created", "run.started"]


def test_an_export_is_enough_to_recompute_every_hash(api_client, viewer):
    client = api_client(viewer)
    _events_for_export()

    lines = [json.loads(line) for line in _body(client.get("/api/v1/audit/export")).splitlines()]

    prev = GENESIS
    for line in lines:
        fields = {
            k: line[k] for k in ("seq", "actor", "action", "object_type", "object_id", "payload")
        }
        at = datetime.fromisoformat(line["at"])
        assert line["prev_hash"] == prev
        assert chain.event_hash(prev_hash=prev, at=at, **fields) == line["hash"]
        prev = line["hash"]
    assert len(lines) == 4


def test_export_as_csv_with_an_object_filter(api_client, viewer):
    client = api_client(viewer)
    _events_for_export()

    response = client.get("/api/v1/audit/export?format=csv&object_type=plan&object_id=1")

    assert response["Content-Type"] == "text/csv"
    rows = list(csv.reader(io.StringIO(_body(response))))
    events = AuditEvent.objects.filter(object_type="plan")
    assert rows == [
        [
            "seq",
            "at",
            "actor",
            "action",
            "object_type",
            "object_id",
            "payload",
            "prev_hash",
            "hash",
        ],
        *[
            [
                str(e.seq),
                chain.format_time(e.at),
                e.actor,
                e.action,
                "plan",
                "1",
                chain.canonical_json(e.payload),
                e.prev_hash,
                e.hash,
            ]
            for e in events
        ],
    ]
    assert len(rows) == 3


def test_export_filters_by_action_and_time(api_client, viewer):
    client = api_client(viewer)
    _events_for_export()
    started = AuditEvent.objects.get(action="run.started").at
    since = (started - timedelta(microseconds=1)).isoformat()

    by_action = _body(client.get("/api/v1/audit/export", {"action": "plan.approved"})).splitlines()
    by_time = _body(client.get("/api/v1/audit/export", {"since": since})).splitlines()
    until = _body(client.get("/api/v1/audit/export", {"until": started.isoformat()})).splitlines()

    assert [json.loads(line)["actor"] for line in by_action] == ["bob"]
    assert [json.loads(line)["action"] for line in by_time] == ["run.started"]
    assert len(until) == 3


def test_an_unknown_export_format_is_a_422(api_client, viewer):
    response = api_client(viewer).get("/api/v1/audit/export?format=xml")

    assert response.status_code == 422
    assert response.json()["code"] == "validation_error"


# --- The API ----------------------------------------------------------------------------


def test_the_audit_list_is_newest_first_filtered_and_paginated(api_client, viewer, settings):
    client = api_client(viewer)
    _events_for_export()

    response = client.get("/api/v1/audit?actor=alice&page_size=1&page=2")

    assert response.status_code == 200
    first_alice = AuditEvent.objects.get(action="plan.created")
    assert response.json() == {"items": [first_alice.as_record()], "count": 2}


def test_the_audit_list_uses_one_page_size_by_default(api_client, viewer):
    client = api_client(viewer)
    for n in range(55):
        record("alice", "thing.done", "thing", n, {})

    body = client.get("/api/v1/audit").json()

    assert (len(body["items"]), body["count"]) == (50, 56)
    assert body["items"][0]["seq"] == 56


def test_verify_over_the_api_walks_on_post_and_serves_the_verdict_on_get(
    api_client, operator, viewer, settings
):
    settings.FORGE_AUDIT_VERIFY_INTERVAL = 0
    walker, reader = api_client(operator), api_client(viewer)
    three_events()
    assert walker.post("/api/v1/audit/verify").json() == {
        "ok": True,
        "verified_through": 5,  # the two tokens' events, then three
        "broken_at": None,
        "reason": "",
        "code": "",
        "checked_at": walker_checked_at(),
    }
    tamper("UPDATE audit_auditevent SET object_id = '99' WHERE seq = 4")

    walked = walker.post("/api/v1/audit/verify").json()

    assert walked == {
        "ok": False,
        "verified_through": 3,
        "broken_at": 4,
        "reason": "hash does not match the row's content",
        "code": "hash_mismatch",
        "checked_at": walker_checked_at(),
    }
    assert reader.get("/api/v1/audit/verify").json() == walked


def walker_checked_at():
    return chain.format_time(services.latest_full_walk().checked_at)


def test_reading_the_audit_needs_a_role(api_client, stranger):
    client = api_client(stranger)

    for path in ("/api/v1/audit", "/api/v1/audit/export", "/api/v1/audit/verify"):
        assert client.get(path).status_code == 403
    assert client.post("/api/v1/audit/verify").status_code == 403
