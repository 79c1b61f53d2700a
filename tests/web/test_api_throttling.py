"""Request rates on the API (issue 26, defect 8): each person's requests, token or session,
count against FORGE_API_RATE; compiling a plan (POST /compile, a new plan or version, a
planner's goal, a replan) also against the stricter FORGE_API_COMPILE_RATE; an address
that keeps presenting no valid credentials is slowed by FORGE_API_ANON_RATE. A throttled
request is answered 429 ``throttled`` in the API's error shape, with ``Retry-After``.

The suite runs with generous rates (tests/conftest.py); each test here sets low ones and
counts in a cache of its own, so nothing else in the suite meets them.
"""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("own_cache")]

THROTTLED = {"detail": "Too many requests.", "code": "throttled"}


def compile_body(plan_document):
    return {"document": plan_document()}


def assert_throttled(response):
    assert response.status_code == 429
    assert response.json() == THROTTLED
    assert 1 <= int(response["Retry-After"]) <= 60


def test_a_token_past_the_api_rate_is_answered_429_with_retry_after(settings, api_client, viewer):
    settings.FORGE_API_RATE = "3/min"
    client = api_client(viewer)

    answers = [client.get("/api/v1/me").status_code for _ in range(3)]
    refused = client.get("/api/v1/me")

    assert answers == [200, 200, 200]
    assert_throttled(refused)


def test_the_rate_is_per_person_whichever_token_or_session_they_use(
    settings, api_client, session_client, viewer, author
):
    settings.FORGE_API_RATE = "2/min"
    first, second, browser = api_client(viewer), api_client(viewer), session_client(viewer)

    assert first.get("/api/v1/me").status_code == 200
    assert second.get("/api/v1/me").status_code == 200
    assert_throttled(browser.get("/api/v1/me"))
    assert_throttled(first.get("/api/v1/runs"))
    assert api_client(author).get("/api/v1/me").status_code == 200  # another person


def test_compiling_has_its_own_stricter_rate_shared_by_every_compiling_call(
    settings, api_client, author, plan_document
):
    settings.FORGE_API_COMPILE_RATE = "2/min"
    client = api_client(author)
    body = compile_body(plan_document)

    compiled = client.post("/api/v1/compile", body, content_type="application/json")
    imported = client.post(
        "/api/v1/plans",
        {"name": "release notes", "document": plan_document()},
        content_type="application/json",
    )
    refused = client.post("/api/v1/compile", body, content_type="application/json")
    version = client.post(
        f"/api/v1/plans/{imported.json()['id']}/versions", body, content_type="application/json"
    )

    assert (compiled.status_code, imported.status_code) == (200, 201)
    assert_throttled(refused)
    assert_throttled(version)
    assert client.get("/api/v1/me").status_code == 200  # other calls keep the person's rate


def test_the_rates_are_read_when_a_request_comes_so_they_can_change_at_run_time(
    settings, api_client, viewer
):
    client = api_client(viewer)
    settings.FORGE_API_RATE = "1/min"
    assert client.get("/api/v1/me").status_code == 200
    assert client.get("/api/v1/me").status_code == 429

    settings.FORGE_API_RATE = "5/min"

    assert client.get("/api/v1/me").status_code == 200


def test_an_empty_rate_turns_that_limit_off(settings, api_client, viewer):
    settings.FORGE_API_RATE = ""
    client = api_client(viewer)

    assert {client.get("/api/v1/me").status_code for _ in range(20)} == {200}


def test_an_address_refused_too_often_is_slowed_before_its_credentials_are_read(
    settings, client, api_client, viewer, django_assert_num_queries
):
    settings.FORGE_API_ANON_RATE = "3/min"
    bad = {"authorization": "Bearer forge_000000000000_" + "x" * 43}

    refusals = [client.get("/api/v1/me", headers=bad).status_code for _ in range(3)]
    with django_assert_num_queries(0):  # no token lookup, no session
        slowed = client.get("/api/v1/me", headers=bad)
    other_address = client.get("/api/v1/me", headers=bad, REMOTE_ADDR="192.0.2.7")

    assert refusals == [401, 401, 401]
    assert_throttled(slowed)
    assert other_address.status_code == 401


def test_the_address_is_the_connection_s_not_a_forwarded_for_header_anyone_can_send(
    settings, client
):
    settings.FORGE_API_ANON_RATE = "2/min"

    answers = [
        client.get("/api/v1/me", HTTP_X_FORWARDED_FOR=f"198.51.100.{n}").status_code
        for n in range(3)
    ]

    assert answers == [401, 401, 429]


def test_good_credentials_are_not_counted_as_refusals(settings, api_client, viewer):
    settings.FORGE_API_ANON_RATE = "2/min"
    client = api_client(viewer)

    assert {client.get("/api/v1/me").status_code for _ in range(5)} == {200}


def test_a_cache_that_fails_lets_requests_through(
    settings, monkeypatch, api_client, viewer, caplog
):
    from accounts import throttling

    settings.FORGE_API_RATE = "1/min"
    monkeypatch.setattr(throttling.SettingRateThrottle, "cache", BrokenCache())
    client = api_client(viewer)

    assert [client.get("/api/v1/me").status_code for _ in range(3)] == [200, 200, 200]
    assert "rate limit not applied" in caplog.text
    monkeypatch.undo()
    client.get("/api/v1/me")  # the cache answers again: the outage this process saw ends
    assert not throttling.REDIS.down


class BrokenCache:
    """A cache whose server is down."""

    def __getattr__(self, name):
        def fail(*args, **kwargs):
            raise ConnectionError("cache server unreachable")

        return fail
