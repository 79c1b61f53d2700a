"""Login throttling: failures are counted per account and per address, a lockout refuses
even the right password until its cool-off ends, and every step lands in the audit trail.

Each test client sends from one address (``REMOTE_ADDR``); ``LIMIT`` and ``COOL_OFF`` are
the deployment's own settings, not values made up for the tests.
"""

from __future__ import annotations

import pytest
from django.conf import settings
from django.test import Client

from audit.models import AuditEvent

pytestmark = pytest.mark.django_db

PASSWORD = "correct-horse-battery-staple"
WRONG = "wrong-guess-1234"
HOME = "203.0.113.7"  # documentation addresses (RFC 5737)
ELSEWHERE = "198.51.100.9"


def limit() -> int:
    return int(settings.AXES_FAILURE_LIMIT)


def client_at(address: str = HOME, **headers: str) -> Client:
    return Client(REMOTE_ADDR=address, headers=headers)


def log_in(client: Client, username: str, password: str):
    return client.post("/accounts/login/", {"username": username, "password": password})


def logged_in(client: Client) -> bool:
    return "_auth_user_id" in client.session


@pytest.fixture
def alice(make_user):
    return make_user("alice", "viewer", password=PASSWORD)


@pytest.fixture
def bob(make_user):
    return make_user("bob", "viewer", password=PASSWORD)


def test_thirty_wrong_passwords_then_the_right_one_is_refused(alice):
    client = client_at()
    for _ in range(30):
        log_in(client, "alice", WRONG)

    response = log_in(client, "alice", PASSWORD)

    assert response.status_code == 429
    assert not logged_in(client)
    assert "Too many failed logins" in response.content.decode()


def test_failures_below_the_limit_do_not_lock_the_account(alice):
    client = client_at()
    for _ in range(limit() - 1):
        assert log_in(client, "alice", WRONG).status_code == 200

    response = log_in(client, "alice", PASSWORD)

    assert response.status_code == 302
    assert logged_in(client)


def test_the_failure_that_reaches_the_limit_is_answered_with_the_lockout_page(alice):
    client = client_at()
    for _ in range(limit() - 1):
        log_in(client, "alice", WRONG)

    response = log_in(client, "alice", WRONG)

    assert response.status_code == 429
    assert response["Retry-After"] == str(int(settings.AXES_COOLOFF_TIME.total_seconds()))
    content = response.content.decode()
    assert '<p class="error" role="alert">Too many failed logins' in content
    assert 'name="username"' in content  # the form stays, for after the cool-off


def test_an_account_is_locked_from_every_address_once_it_reaches_the_limit(alice):
    # One guess from each of many addresses: a distributed brute force on one account.
    for n in range(limit()):
        log_in(client_at(f"192.0.2.{n + 1}"), "alice", WRONG)
    client = client_at(ELSEWHERE)

    response = log_in(client, "alice", PASSWORD)

    assert response.status_code == 429
    assert not logged_in(client)


def test_an_address_is_locked_for_every_account_once_it_reaches_the_limit(alice, bob):
    # One guess at each of many accounts from one address: password spraying.
    sprayer = client_at(HOME)
    for n in range(limit()):
        log_in(sprayer, f"user{n}", WRONG)

    refused = log_in(sprayer, "bob", PASSWORD)
    elsewhere = client_at(ELSEWHERE)
    accepted = log_in(elsewhere, "bob", PASSWORD)

    assert (refused.status_code, logged_in(sprayer)) == (429, False)
    assert (accepted.status_code, logged_in(elsewhere)) == (302, True)


def test_the_lockout_ends_after_the_cool_off(alice):
    from axes.models import AccessAttempt

    client = client_at()
    for _ in range(limit()):
        log_in(client, "alice", WRONG)
    assert log_in(client, "alice", PASSWORD).status_code == 429

    for attempt in AccessAttempt.objects.all():  # as if the cool-off had passed
        attempt.attempt_time -= settings.AXES_COOLOFF_TIME
        attempt.save()
    response = log_in(client, "alice", PASSWORD)

    assert response.status_code == 302
    assert logged_in(client)


def test_a_lockout_is_answered_as_json_when_json_is_asked_for(alice):
    client = client_at(accept="application/json")
    for _ in range(limit()):
        log_in(client, "alice", WRONG)

    response = log_in(client, "alice", PASSWORD)

    minutes = int(settings.AXES_COOLOFF_TIME.total_seconds()) // 60
    assert response.status_code == 429
    assert response["Content-Type"] == "application/json"
    assert response.json() == {
        "detail": "Too many failed logins for this account or from this address; "
        f"try again in {minutes} minutes.",
        "code": "login_locked_out",
    }


def test_failures_the_lockout_and_refused_attempts_are_audited_without_passwords(alice):
    client = client_at()
    for _ in range(limit()):
        log_in(client, "alice", WRONG)
    log_in(client, "alice", PASSWORD)

    events = list(AuditEvent.objects.order_by("seq").values_list("actor", "action", "payload"))
    who = {"username": "alice", "ip_address": HOME}
    failures = [
        ("web:anonymous", "user.login_failed", {**who, "failures": n})
        for n in range(1, limit() + 1)
    ]
    lockout = {
        **who,
        "failure_limit": limit(),
        "cool_off_seconds": int(settings.AXES_COOLOFF_TIME.total_seconds()),
    }
    assert events == [
        *failures,
        ("web:anonymous", "user.locked_out", lockout),
        ("web:anonymous", "user.login_refused", who),
    ]
    stored = "".join(str(row) for row in AuditEvent.objects.values_list("payload", "hash"))
    assert WRONG not in stored and PASSWORD not in stored


def test_a_successful_login_is_audited_with_its_address(alice):
    log_in(client_at(), "alice", PASSWORD)

    event = AuditEvent.objects.get()
    assert (event.actor, event.action, event.payload) == (
        "alice",
        "user.logged_in",
        {"ip_address": HOME},
    )


def test_bad_bearer_tokens_answer_401_and_lock_no_one(alice):
    # API tokens hold 256 random bits: guessing one is not a realistic attack, so token
    # failures are not throttled, and they must not lock the account or the address.
    api = client_at(authorization="Bearer forge_0123456789ab_" + "x" * 43)  # well-formed
    statuses = {api.get("/api/v1/me").status_code for _ in range(limit() + 5)}
    client = client_at()

    response = log_in(client, "alice", PASSWORD)

    assert statuses == {401}
    assert response.status_code == 302
