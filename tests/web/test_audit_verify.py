"""Who may walk the whole chain, and how often (issue "Trust", problem 13): ``GET
/api/v1/audit/verify`` serves the last verdict and walks nothing; ``POST`` walks, for
operators and admins, one walk at a time across processes and not within
``FORGE_AUDIT_VERIFY_INTERVAL`` of the last; the page's button takes the same lock."""

from __future__ import annotations

import io
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone

from accounts.roles import refusal
from audit import chain, services, walk_lock
from audit.models import ChainCheckpoint, WalkLock
from audit.services import record

from .audit_helpers import post_verify, tamper

pytestmark = pytest.mark.django_db


def events(count):
    return [record("alice", "thing.done", "thing", n, {"n": n}) for n in range(1, count + 1)]


def full_walks():
    return ChainCheckpoint.objects.filter(kind="full").count()


# --- GET serves, POST walks -------------------------------------------------------------


def test_reading_the_verification_before_any_walk_says_so_and_walks_nothing(api_client, viewer):
    client = api_client(viewer)
    events(3)

    response = client.get("/api/v1/audit/verify")

    assert response.status_code == 200
    assert response.json() == {
        "ok": False,
        "verified_through": 0,
        "broken_at": None,
        "reason": "the whole chain has not been walked yet",
        "code": "not_verified",
        "checked_at": None,
    }
    assert ChainCheckpoint.objects.count() == 0


def test_reading_the_verification_serves_the_last_walk_without_walking_again(
    api_client, viewer, operator
):
    reader = api_client(viewer)
    walked = api_client(operator).post("/api/v1/audit/verify").json()
    events(3)
    tamper("UPDATE audit_auditevent SET payload = %s WHERE seq = 3", ['{"n":30}'])

    served = reader.get("/api/v1/audit/verify").json()

    assert served == walked
    assert (served["ok"], served["verified_through"]) == (True, 2)  # the two tokens
    assert full_walks() == 1


def test_reading_the_verification_serves_a_break_a_later_page_check_found(
    api_client, viewer, operator
):
    reader = api_client(viewer)
    api_client(operator).post("/api/v1/audit/verify")  # full walk: ok through 2
    tamper("UPDATE audit_auditevent SET hash = %s WHERE seq = 2", ["f" * 64])
    services.chain_state()  # the page's check: row 2 changed since it was verified

    served = reader.get("/api/v1/audit/verify").json()

    assert (served["ok"], served["broken_at"], served["code"]) == (False, 2, "row_changed")


@pytest.mark.parametrize("role", ["viewer", "author", "approver"])
def test_walking_the_chain_needs_an_operator_auditor_or_admin(api_client, make_user, role):
    response = api_client(make_user(f"a-{role}", role)).post("/api/v1/audit/verify")

    assert response.status_code == 403
    assert response.json() == {
        "detail": refusal("audit.verify"),
        "code": "permission_denied",
    }
    assert ChainCheckpoint.objects.count() == 0


@pytest.mark.parametrize("role", ["operator", "admin", "auditor"])
def test_operators_auditors_and_admins_walk_the_chain(api_client, make_user, role):
    client = api_client(make_user(f"a-{role}", role))
    events(3)

    response = client.post("/api/v1/audit/verify")

    assert response.status_code == 200
    body = response.json()
    assert (body["ok"], body["verified_through"], body["code"]) == (True, 4, "")
    assert body["checked_at"] == chain.format_time(services.latest_full_walk().checked_at)


# --- Throttled: one at a time, not too often --------------------------------------------


def test_a_second_walk_within_the_interval_is_refused_with_429(api_client, operator, settings):
    settings.FORGE_AUDIT_VERIFY_INTERVAL = 60
    client = api_client(operator)

    first, second = client.post("/api/v1/audit/verify"), client.post("/api/v1/audit/verify")

    assert (first.status_code, second.status_code) == (200, 429)
    assert second.json()["code"] == "verify_throttled"
    assert second.json()["detail"].startswith("the whole chain was walked 0 s ago; walks are")
    assert 59 <= int(second["Retry-After"]) <= 60
    assert full_walks() == 1


def test_walks_may_follow_each_other_once_the_interval_has_passed(api_client, operator, settings):
    settings.FORGE_AUDIT_VERIFY_INTERVAL = 60
    client = api_client(operator)
    client.post("/api/v1/audit/verify")
    WalkLock.objects.filter(pk=1).update(finished_at=timezone.now() - timedelta(seconds=61))

    assert client.post("/api/v1/audit/verify").status_code == 200
    assert full_walks() == 2


def test_a_walk_is_refused_with_409_while_another_runs(api_client, operator):
    walk_lock.claim("another process")  # its walk has started and not finished

    response = api_client(operator).post("/api/v1/audit/verify")

    assert response.status_code == 409
    assert response.json() == {
        "detail": "a full walk of the chain is already running (started by another process)",
        "code": "verify_running",
    }
    assert response["Retry-After"] == "5"
    assert full_walks() == 0


def test_a_walk_whose_process_died_frees_the_lock_when_its_lease_ends(api_client, operator):
    long_ago = timezone.now() - walk_lock.WALK_LEASE - timedelta(seconds=1)
    walk_lock.claim("a dead process", now=long_ago)

    assert api_client(operator).post("/api/v1/audit/verify").status_code == 200


def test_two_claims_from_the_same_reading_cannot_both_win():
    stale = WalkLock.objects.create(pk=1)  # two processes read this row
    walk_lock.claim("first")

    # The second claims from what it read before the first claim changed the row.
    taken = WalkLock.objects.filter(pk=1, turn=stale.turn).update(turn=stale.turn + 1)

    assert taken == 0


def test_the_command_is_not_throttled(operator, api_client, settings):
    settings.FORGE_AUDIT_VERIFY_INTERVAL = 3600
    api_client(operator).post("/api/v1/audit/verify")

    call_command("forge_audit_verify", stdout=io.StringIO())

    assert full_walks() == 2


# --- The page's button takes the same gate ------------------------------------------------


def test_two_posts_from_the_page_never_walk_at_once(session_client, operator, monkeypatch):
    client = session_client(operator)
    client.get("/audit/")
    real, arrived = services.verify_and_record, []

    def walk_while_another_post_arrives(*args, **kwargs):
        if not arrived:  # a second request arrives, once, while the first one walks
            arrived.append(client.post("/audit/verify/", csrf(client), follow=True))
        return real(*args, **kwargs)

    monkeypatch.setattr(services, "verify_and_record", walk_while_another_post_arrives)
    post_verify(client)

    assert full_walks() == 1
    assert b"A full walk of the chain is running" in arrived[0].content


def csrf(client):
    return {"csrfmiddlewaretoken": client.cookies["csrftoken"].value}


def test_the_page_refuses_a_walk_to_a_viewer(session_client, viewer):
    client = session_client(viewer)
    client.get("/audit/")

    assert post_verify(client).status_code == 403
    assert full_walks() == 0
