"""The anchor log (audit.anchors): the chain's head, signed, outside the database, every N
events and at each verify, and what verify finds when rows or anchors are tampered with.

Issue "Trust", problem 6: deleting the newest rows or re-hashing the tail passed verify,
and a verify cleared the page's broken banner. The tamper tests below each change what
an attacker could change (rows with database access, lines with file access) and assert
the exact verdict.
"""

from __future__ import annotations

import hashlib
import hmac
import io
import json
import multiprocessing
import runpy
import threading
import time
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.core.management import CommandError, call_command
from django.db import transaction

from audit import chain, services
from audit.anchors import AnchorLog, AnchorLogError, anchor_key, anchor_log
from audit.models import AnchorReceipt, AuditEvent
from audit.services import Verification, record, verify

from .audit_helpers import banner, tamper

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def anchor_every_three(settings):
    settings.FORGE_AUDIT_ANCHOR_EVERY = 3


@pytest.fixture
def events(django_capture_on_commit_callbacks):
    """``events(count)``: record ``count`` events, running what waits for the commit (the
    anchors) as a real commit would."""

    def make(count, actor="alice"):
        made = []
        for _ in range(count):
            with django_capture_on_commit_callbacks(execute=True):
                n = AuditEvent.objects.count() + 1
                made.append(record(actor, "thing.done", "thing", n, {"n": n}))
        return made

    return make


def lines(path):
    return [json.loads(line) for line in Path(path).read_text().splitlines()]


def verify_command():
    out = io.StringIO()
    call_command("forge_audit_verify", stdout=out)
    return out.getvalue()


def rehash_from(seq, payload):
    """Rewrite row ``seq``'s payload and re-chain every row from it, as an attacker who
    knows the (public) hash rule would: the chain alone verifies again."""
    rows = list(AuditEvent.objects.filter(seq__gte=seq).order_by("seq"))
    prev = AuditEvent.objects.get(seq=seq - 1).hash if seq > 1 else chain.GENESIS_HASH
    for row in rows:
        if row.seq == seq:
            row.payload = payload
        row.prev_hash = prev
        row.hash = row.expected_hash()
        tamper(
            "UPDATE audit_auditevent SET payload = %s, prev_hash = %s, hash = %s WHERE seq = %s",
            [chain.canonical_json(row.payload), row.prev_hash, row.hash, row.seq],
        )
        prev = row.hash


# --- Writing anchors --------------------------------------------------------------------


def test_the_head_is_anchored_every_n_events_once_committed(events, audit_anchor_log):
    made = events(7)

    assert [(a["n"], a["seq"], a["hash"], a["count"]) for a in lines(audit_anchor_log)] == [
        (1, 3, made[2].hash, 3),
        (2, 6, made[5].hash, 6),
    ]
    assert list(AnchorReceipt.objects.order_by("n").values_list("n", "seq")) == [(1, 3), (2, 6)]


def test_an_event_rolled_back_leaves_no_anchor(django_capture_on_commit_callbacks, settings):
    settings.FORGE_AUDIT_ANCHOR_EVERY = 1

    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        with pytest.raises(RuntimeError), transaction.atomic():
            record("alice", "thing.done", "thing", 1, {})
            raise RuntimeError("the change failed")

    assert callbacks == []
    assert not Path(django_settings.FORGE_AUDIT_ANCHOR_PATH).exists()
    assert AnchorReceipt.objects.count() == 0


def test_each_verify_anchors_the_head_it_verified(events, audit_anchor_log):
    made = events(4)

    assert verify_command() == "audit chain ok through seq 4\n"

    assert [(a["n"], a["seq"], a["hash"], a["count"]) for a in lines(audit_anchor_log)] == [
        (1, 3, made[2].hash, 3),
        (2, 4, made[3].hash, 4),
    ]


def test_an_anchor_is_signed_and_chained_to_the_one_before(events, audit_anchor_log):
    events(6)
    raw = Path(audit_anchor_log).read_text().splitlines()
    first, second = lines(audit_anchor_log)

    key = hmac.new(b"forge-development-only-secret-key-never-use-in-production-0123456789",
                   b"forge-audit-anchors", "sha256").digest()  # fmt: skip
    body = {k: v for k, v in second.items() if k != "sig"}
    assert sorted(second) == ["at", "count", "hash", "n", "prev", "seq", "sig"]
    assert first["prev"] == "0" * 64
    assert second["prev"] == hashlib.sha256(raw[0].encode()).hexdigest()
    assert second["sig"] == hmac.new(key, chain.canonical_json(body).encode(), "sha256").hexdigest()


def test_an_explicit_anchor_key_signs_instead_of_the_one_derived_from_secret_key(settings):
    settings.FORGE_AUDIT_ANCHOR_KEY = "a key kept apart from SECRET_KEY"
    settings.SECRET_KEY = "rotated"

    assert anchor_key() == b"a key kept apart from SECRET_KEY"


def test_a_broken_chain_is_not_anchored(events, audit_anchor_log):
    events(4)
    tamper("UPDATE audit_auditevent SET payload = %s WHERE seq = 4", ['{"n":40}'])

    with pytest.raises(CommandError):
        verify_command()

    assert [a["seq"] for a in lines(audit_anchor_log)] == [3]


def test_an_unwritable_anchor_log_does_not_fail_the_change_it_anchors(
    events, settings, tmp_path, caplog
):
    (tmp_path / "a-file").write_text("")
    settings.FORGE_AUDIT_ANCHOR_PATH = str(tmp_path / "a-file" / "anchors.jsonl")

    made = events(3)

    assert [e.seq for e in made] == [1, 2, 3]
    assert AuditEvent.objects.count() == 3
    assert "audit anchor for seq 3 not written" in caplog.text
    assert verify().code == "anchor_log_unreadable"
    with pytest.raises(AnchorLogError, match="cannot open the audit anchor log"):
        services._write_anchor(3, made[2].hash, 3)


def _append_many(path, key, worker):
    log = AnchorLog(Path(path), key)
    for n in range(25):
        log.append(seq=worker * 100 + n, hash=f"{worker:02d}" * 32, count=n, at=chain_now())


def chain_now():
    from datetime import UTC, datetime

    return datetime.now(UTC)


def test_processes_appending_at_once_never_interleave_or_fork(tmp_path):
    path, key = tmp_path / "anchors.jsonl", b"k"
    context = multiprocessing.get_context("fork")
    workers = [context.Process(target=_append_many, args=(path, key, w)) for w in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()

    reading = AnchorLog(path, key).read()

    assert [worker.exitcode for worker in workers] == [0, 0, 0, 0]
    assert reading.problem == ""
    assert [anchor.n for anchor in reading.anchors] == list(range(1, 101))


def test_the_anchor_log_defaults_to_a_file_next_to_the_sqlite_database(monkeypatch, tmp_path):
    settings_file = Path(django_settings.BASE_DIR) / "forge_web" / "settings.py"
    monkeypatch.delenv("FORGE_AUDIT_ANCHOR_PATH", raising=False)
    monkeypatch.setenv("DATABASE_URL", f"sqlite:///{tmp_path / 'forge.sqlite3'}")
    assert runpy.run_path(str(settings_file))["FORGE_AUDIT_ANCHOR_PATH"] == str(
        tmp_path / "forge.sqlite3-audit-anchors.jsonl"
    )
    monkeypatch.setenv("DATABASE_URL", "postgres://u@db:5432/forge")
    assert runpy.run_path(str(settings_file))["FORGE_AUDIT_ANCHOR_PATH"] == str(
        Path(django_settings.BASE_DIR) / "audit-anchors.jsonl"
    )


# --- Anchors on a timer (issue 26, defect 11) -------------------------------------------
# With an anchor only every FORGE_AUDIT_ANCHOR_EVERY events, up to 99 events after the
# newest anchor could be deleted or re-hashed unseen, for as long as no more came. Now the
# head is anchored too once the oldest unanchored event has waited
# FORGE_AUDIT_ANCHOR_SECONDS: checked after a commit, and every second by the worker.


def later(seconds):
    from datetime import timedelta

    from django.utils import timezone

    return timezone.now() + timedelta(seconds=seconds)


def test_a_few_events_are_anchored_once_the_interval_has_passed(events, settings, audit_anchor_log):
    settings.FORGE_AUDIT_ANCHOR_EVERY, settings.FORGE_AUDIT_ANCHOR_SECONDS = 100, 5
    made = events(3)

    assert services.anchor_if_due(later(4)) is None
    anchor = services.anchor_if_due(later(5.5))

    assert (anchor.seq, anchor.hash) == (3, made[2].hash)
    assert [(a["seq"], a["count"]) for a in lines(audit_anchor_log)] == [(3, 3)]
    assert list(AnchorReceipt.objects.values_list("seq", flat=True)) == [3]
    assert services.anchor_if_due(later(60)) is None  # nothing new since


def test_the_interval_runs_from_the_oldest_event_the_newest_anchor_left_out(events, settings):
    settings.FORGE_AUDIT_ANCHOR_EVERY, settings.FORGE_AUDIT_ANCHOR_SECONDS = 3, 5
    events(4)  # anchored at seq 3 by the count; seq 4 waits

    assert services.anchor_if_due(later(4)) is None
    assert services.anchor_if_due(later(6)).seq == 4


def test_deleting_an_unanchored_event_is_caught_once_the_timer_anchored_it(events, settings):
    settings.FORGE_AUDIT_ANCHOR_EVERY, settings.FORGE_AUDIT_ANCHOR_SECONDS = 100, 5
    events(3)  # no anchor by the count: deleting seq 3 now would pass verify
    services.anchor_if_due(later(6))
    tamper("DELETE FROM audit_auditevent WHERE seq = 3")

    assert verify().code == "truncated"


def test_the_first_event_after_the_interval_anchors_the_head_once_committed(
    events, settings, monkeypatch, audit_anchor_log
):
    settings.FORGE_AUDIT_ANCHOR_EVERY, settings.FORGE_AUDIT_ANCHOR_SECONDS = 100, 0.3
    monkeypatch.setattr(services, "_next_time_check", 0.0)  # this process never looked
    events(2)
    assert not Path(audit_anchor_log).exists()

    time.sleep(0.4)
    made = events(1)

    assert [(a["seq"], a["hash"]) for a in lines(audit_anchor_log)] == [(3, made[0].hash)]


def test_the_worker_anchors_a_quiet_system_s_last_events(settings, monkeypatch):
    from runs.management.commands import forge_worker

    settings.FORGE_AUDIT_ANCHOR_SECONDS = 0.2
    checks = []
    monkeypatch.setattr(services, "anchor_if_due", lambda: checks.append(1))
    monkeypatch.setattr(forge_worker, "ANCHOR_CHECK_SECONDS", 0.05)
    stop = threading.Event()
    housekeeper = threading.Thread(target=forge_worker._housekeep_forever, args=(stop,))

    housekeeper.start()
    time.sleep(0.5)
    stop.set()
    housekeeper.join(5)

    assert len(checks) >= 3


# --- Issue "Trust", problem 6 -----------------------------------------------------------


def test_deleting_the_newest_rows_fails_the_verify_command(events, audit_anchor_log):
    events(5)
    verify_command()  # anchors seq 5
    anchor = lines(audit_anchor_log)[-1]
    tamper("DELETE FROM audit_auditevent WHERE seq > 3")

    with pytest.raises(CommandError) as failure:
        verify_command()

    assert str(failure.value) == (
        f"audit chain broken at seq 4: truncated: anchor 2 ({anchor['at']}) says seq 5 has "
        f"hash {anchor['hash'][:16]}…, the database ends at seq 3 "
        "(verified through seq 3; truncated)"
    )


def test_rehashing_the_tail_fails_verify_over_the_api(events, api_client, operator):
    client = api_client(operator)  # its token is seq 1
    events(4)
    verify_command()  # anchors seq 3 (every three) and seq 5
    rehash_from(4, {"n": 40})
    assert services._walk(1, chain.GENESIS_HASH)[0].ok  # the chain alone hides it

    response = client.post("/api/v1/audit/verify")

    body = response.json()
    assert response.status_code == 200
    assert (body["ok"], body["verified_through"], body["broken_at"], body["code"]) == (
        False,
        3,
        5,
        "rehashed",
    )
    assert body["reason"].endswith(": rows 4 to 5 were rewritten")


def test_verify_over_a_truncated_chain_does_not_clear_the_broken_banner(
    events, session_client, operator
):
    client = session_client(operator)  # its login is seq 1
    events(5)
    verify_command()
    tamper("DELETE FROM audit_auditevent WHERE seq > 4")
    assert banner(client.get("/audit/")) == "broken"  # the checkpoint's row 6 is gone

    with pytest.raises(CommandError, match="truncated"):
        verify_command()

    assert banner(client.get("/audit/")) == "broken"
    assert verify().code == "truncated"


def test_only_a_whole_chain_clears_a_broken_state(events, session_client, operator):
    client = session_client(operator)
    events(5)
    verify_command()
    kept = [
        [getattr(row, column) for column in ("seq", "at", "actor", "action", "object_type",
                                             "object_id", "prev_hash", "hash")]
        + [chain.canonical_json(row.payload)]
        for row in AuditEvent.objects.filter(seq__gt=4)
    ]  # fmt: skip
    tamper("DELETE FROM audit_auditevent WHERE seq > 4")
    with pytest.raises(CommandError):
        verify_command()
    for values in kept:  # the rows come back exactly as they were
        tamper(
            "INSERT INTO audit_auditevent (seq, at, actor, action, object_type, object_id, "
            "prev_hash, hash, payload) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
            values,
        )

    assert verify_command() == "audit chain ok through seq 6\n"
    assert banner(client.get("/audit/")) == "ok"


# --- Tampering with rows ----------------------------------------------------------------


def test_a_payload_edit_is_named(events):
    events(5)
    verify_command()
    tamper("UPDATE audit_auditevent SET payload = %s WHERE seq = 2", ['{"n":20}'])

    assert verify() == Verification(
        False, 1, 2, "hash does not match the row's content", "hash_mismatch"
    )


def test_a_row_deleted_from_the_middle_is_named(events):
    events(5)
    verify_command()
    tamper("DELETE FROM audit_auditevent WHERE seq = 3")

    assert verify() == Verification(
        False, 2, 4, "seq 4 follows seq 2: rows are missing", "rows_missing"
    )


def test_a_deleted_tail_is_named_truncated(events, audit_anchor_log):
    events(5)
    verify_command()
    anchor = lines(audit_anchor_log)[-1]
    tamper("DELETE FROM audit_auditevent WHERE seq >= 4")

    assert verify() == Verification(
        False,
        3,
        4,
        f"truncated: anchor 2 ({anchor['at']}) says seq 5 has hash {anchor['hash'][:16]}…, "
        "the database ends at seq 3",
        "truncated",
    )


def test_a_tail_deleted_past_the_last_anchor_is_caught_by_it_alone(events):
    events(3)  # anchored every three: seq 3, no verify
    tamper("DELETE FROM audit_auditevent WHERE seq = 3")

    assert verify().code == "truncated"


def test_a_re_hashed_tail_is_named_from_the_last_anchor_that_still_matches(
    events, audit_anchor_log
):
    made = events(7)  # anchors at 3 and 6
    rehash_from(5, {"n": 50})
    anchor = lines(audit_anchor_log)[-1]
    new_hash = AuditEvent.objects.get(seq=6).hash

    assert verify() == Verification(
        False,
        3,
        6,
        f"re-hashed: anchor 2 ({anchor['at']}) says seq 6 has hash {made[5].hash[:16]}…, "
        f"the database has {new_hash[:16]}…: rows 4 to 6 were rewritten",
        "rehashed",
    )


def test_a_database_attacker_who_also_deletes_the_receipts_is_still_caught_by_the_log(events):
    events(5)
    verify_command()
    tamper("DELETE FROM audit_auditevent WHERE seq > 3")
    tamper("DELETE FROM audit_anchorreceipt")

    assert verify().code == "truncated"


# --- Tampering with the anchor log ------------------------------------------------------


def test_a_deleted_anchor_log_is_named(events, audit_anchor_log):
    events(5)
    verify_command()
    Path(audit_anchor_log).unlink()

    assert verify() == Verification(
        False,
        5,
        None,
        "anchor log: the log is missing, but the database wrote anchor 2 (seq 5) to it",
        "anchors_missing",
    )


def test_an_anchor_log_cut_short_is_named(events, audit_anchor_log):
    events(6)
    verify_command()  # anchors 1 (seq 3), 2 (seq 6), 3 (seq 6)
    path = Path(audit_anchor_log)
    path.write_text("".join(path.read_text().splitlines(keepends=True)[:1]))

    assert verify() == Verification(
        False,
        6,
        None,
        "anchor log: the log ends at anchor 1, but the database wrote anchor 3 (seq 6) to it",
        "anchors_missing",
    )


def test_a_tail_deleted_along_with_its_anchors_is_still_named(events, audit_anchor_log):
    events(6)
    path = Path(audit_anchor_log)
    path.write_text(path.read_text().splitlines(keepends=True)[0])  # keeps seq 3's anchor
    tamper("DELETE FROM audit_auditevent WHERE seq > 3")

    assert verify().code == "anchors_missing"


def test_an_anchor_removed_from_the_middle_is_named(events, audit_anchor_log):
    events(9)  # anchors at 3, 6, 9
    path = Path(audit_anchor_log)
    first, _, third = path.read_text().splitlines(keepends=True)
    path.write_text(first + third)

    assert verify() == Verification(
        False,
        9,
        None,
        "anchor log: line 2 of the anchor log (anchor 3) does not follow the line before "
        "it: anchors were removed, inserted or reordered",
        "anchor_chain_broken",
    )


def test_an_edited_anchor_is_named(events, audit_anchor_log):
    events(6)
    path = Path(audit_anchor_log)
    first, second = path.read_text().splitlines(keepends=True)
    path.write_text(first + second.replace('"seq":6', '"seq":2'))

    assert verify() == Verification(
        False,
        6,
        None,
        "anchor log: line 2 of the anchor log is not an anchor signed with this deployment's "
        "key (edited, forged, or cut short)",
        "anchor_invalid",
    )


def test_an_anchor_forged_with_another_key_is_named(events, audit_anchor_log):
    events(3)
    AnchorLog(Path(audit_anchor_log), b"not the deployment's key").append(
        seq=3, hash="f" * 64, count=3, at=chain_now()
    )

    reading = anchor_log().read()

    assert (len(reading.anchors), reading.code) == (1, "anchor_invalid")
    assert verify().code == "anchor_invalid"


def test_an_anchor_log_started_over_is_named(events, audit_anchor_log):
    events(3)
    Path(audit_anchor_log).unlink()
    events(3)  # anchor 1 again, for seq 6

    assert verify() == Verification(
        False,
        6,
        None,
        "anchor log: anchor 1 in the log is not the one the database wrote (seq 3): the log "
        "was replaced or started over",
        "anchor_log_replaced",
    )


def test_the_page_says_when_the_anchor_log_does_not_vouch_for_the_chain(
    events, session_client, operator, audit_anchor_log
):
    client = session_client(operator)
    events(5)
    verify_command()
    Path(audit_anchor_log).unlink()
    with pytest.raises(CommandError, match="not verified: anchor log: the log is missing"):
        verify_command()

    response = client.get("/audit/")

    assert banner(response) == "broken"
    assert b"The anchor log does not vouch for the chain" in response.content
