"""MCP authorization (SPEC section 11, issue 29 item 6), in-process: the protected
resource metadata and the authorization server's metadata, 401s of /mcp and
/mcp/gateway that name the metadata, registration that admits public clients only, and
access tokens that act as the person who consented (no more: expired, revoked, unscoped
or an inactive user's tokens are refused; a viewer's token is refused what a viewer's API
token is; an author's token cannot approve the author's own version).
"""

from __future__ import annotations

import base64
import hashlib
import re
from datetime import timedelta
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from django.core.cache import cache
from django.utils import timezone
from oauth2_provider.models import AccessToken, Application, set_token_value

from audit.models import AuditEvent
from plans.models import Plan
from runs.models import Run

from . import test_gate
from .mcp_helpers import answer, call, raw_post
from .test_gate import document
from .test_mcp_endpoint import MCP_HEADERS, endpoint

runner_calls = test_gate.runner_calls

pytestmark = pytest.mark.django_db(transaction=True)

HOST_METADATA = {
    "client_name": "Some MCP host",
    "redirect_uris": ["http://localhost:33418/callback"],
    "grant_types": ["authorization_code", "refresh_token"],
    "response_types": ["code"],
}


def granted(user: Any, *, scope: str = "mcp", expires_in: int = 3600) -> str:
    """An access token of Forge's OAuth server granted to a registered public host, as
    the token endpoint stores one."""
    application = Application.objects.create(
        name="host",
        client_type=Application.CLIENT_PUBLIC,
        authorization_grant_type=Application.GRANT_AUTHORIZATION_CODE,
        redirect_uris="http://localhost:33418/callback",
    )
    value = f"oauth-{user.username}-{scope}-{expires_in}-{AccessToken.objects.count()}"
    token = AccessToken(
        user=user,
        application=application,
        scope=scope,
        expires=timezone.now() + timedelta(seconds=expires_in),
    )
    set_token_value(token, value)  # a digest only, as the library keeps it here
    token.save()
    return value


@pytest.mark.parametrize(
    ("suffix", "resource"),
    [
        ("", "http://testserver"),
        ("/mcp", "http://testserver/mcp"),
        ("/mcp/gateway", "http://testserver/mcp/gateway"),
    ],
)
def test_the_protected_resource_metadata_names_the_endpoint_and_forges_own_server(
    client, suffix, resource
):
    response = client.get(f"/.well-known/oauth-protected-resource{suffix}")

    assert response.status_code == 200
    assert response.json() == {
        "resource": resource,
        "authorization_servers": ["http://testserver"],
        "scopes_supported": ["mcp"],
        "bearer_methods_supported": ["header"],
        "resource_name": "Forge MCP",
    }


def test_the_authorization_server_metadata_offers_the_code_flow_with_s256_and_registration(
    client,
):
    metadata = client.get("/.well-known/oauth-authorization-server").json()

    assert metadata["issuer"] == "http://testserver"
    assert metadata["authorization_endpoint"] == "http://testserver/oauth/authorize/"
    assert metadata["token_endpoint"] == "http://testserver/oauth/token/"
    assert metadata["registration_endpoint"] == "http://testserver/oauth/register/"
    assert metadata["revocation_endpoint"] == "http://testserver/oauth/revoke/"
    assert metadata["code_challenge_methods_supported"] == ["S256"]
    assert metadata["response_types_supported"] == ["code"]
    assert metadata["grant_types_supported"] == ["authorization_code", "refresh_token"]
    assert metadata["token_endpoint_auth_methods_supported"] == ["none"]
    assert metadata["scopes_supported"] == ["mcp"]


@pytest.mark.parametrize("path", ["/mcp", "/mcp/gateway"])
def test_a_401_of_either_endpoint_names_its_resource_metadata(db, path):
    status, headers, body = raw_post(endpoint(), MCP_HEADERS, path=path)

    assert status == 401
    assert headers["www-authenticate"] == (
        'Bearer realm="forge", resource_metadata='
        f'"http://testserver/.well-known/oauth-protected-resource{path}"'
    )
    assert body["code"] == "not_authenticated"


def test_a_request_without_a_token_to_a_host_outside_allowed_hosts_names_no_metadata(db):
    status, headers, body = raw_post(endpoint(), MCP_HEADERS, host="evil.example")

    assert (status, body) == (400, {"detail": "Bad Request", "code": "bad_request"})
    assert "www-authenticate" not in headers


def test_a_public_host_registers_itself_and_gets_a_client_id_without_a_secret(client):
    response = client.post("/oauth/register/", HOST_METADATA, content_type="application/json")

    assert response.status_code == 201
    registered = response.json()
    assert registered["token_endpoint_auth_method"] == "none"
    assert "client_secret" not in registered
    assert registered["redirect_uris"] == HOST_METADATA["redirect_uris"]
    application = Application.objects.get(client_id=registered["client_id"])
    assert (application.client_type, application.authorization_grant_type) == (
        "public",
        "authorization-code",
    )
    # The registration's own token (RFC 7592) acts as no one.
    headers = {"Authorization": f"Bearer {registered['registration_access_token']}"}
    assert client.get("/api/v1/me", headers=headers).status_code == 401


@pytest.mark.parametrize(
    ("change", "error", "names"),
    [
        (
            {"token_endpoint_auth_method": "client_secret_basic"},
            "invalid_client_metadata",
            "public clients only",
        ),
        ({"grant_types": ["client_credentials"]}, "invalid_client_metadata", "grant_types"),
        ({"response_types": ["token"]}, "invalid_client_metadata", "response_types"),
        ({"redirect_uris": []}, "invalid_redirect_uri", "non-empty"),
        ({"redirect_uris": ["http://host.example/cb"]}, "invalid_redirect_uri", "loopback"),
        ({"redirect_uris": ["https://host.example/cb#x"]}, "invalid_redirect_uri", "fragment"),
        ({"redirect_uris": ["javascript:alert(1)"]}, "invalid_redirect_uri", "neither https"),
        (
            {"redirect_uris": ["https://me:pw@host.example/cb"]},
            "invalid_redirect_uri",
            "user information",
        ),
    ],
)
def test_registration_refuses_what_forge_does_not_admit_and_says_why(client, change, error, names):
    response = client.post(
        "/oauth/register/", {**HOST_METADATA, **change}, content_type="application/json"
    )

    assert response.status_code == 400
    assert response.json()["error"] == error
    assert names in response.json()["error_description"]
    assert not Application.objects.exists()


def test_registrations_past_the_addresss_rate_are_429_with_retry_after(client, settings):
    settings.FORGE_OAUTH_REGISTRATION_RATE = "2/min"
    cache.clear()

    answers = [
        client.post("/oauth/register/", HOST_METADATA, content_type="application/json")
        for _ in range(3)
    ]

    assert [answer.status_code for answer in answers] == [201, 201, 429]
    assert answers[2].json()["code"] == "throttled"
    assert int(answers[2]["Retry-After"]) >= 1
    assert Application.objects.count() == 2


def test_registration_refuses_a_body_that_is_not_a_json_object(client):
    response = client.post("/oauth/register/", "[1, 2]", content_type="application/json")

    assert (response.status_code, response.json()["error"]) == (400, "invalid_client_metadata")


def test_the_consent_page_lets_the_form_return_to_the_hosts_redirect_uri(author, session_client):
    registered = (
        session_client(author)
        .post("/oauth/register/", HOST_METADATA, content_type="application/json")
        .json()
    )
    query = {
        "response_type": "code",
        "client_id": registered["client_id"],
        "redirect_uri": HOST_METADATA["redirect_uris"][0],
        "state": "s",
        "code_challenge": "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGKSWbwMzg",
        "code_challenge_method": "S256",
        "scope": "mcp",
    }

    page = session_client(author).get("/oauth/authorize/", query)
    plain = session_client(author).get(
        "/oauth/authorize/", {**query, "code_challenge_method": "plain"}
    )
    without = session_client(author).get(
        "/oauth/authorize/", {k: v for k, v in query.items() if not k.startswith("code_")}
    )

    assert page.status_code == 200
    assert b"asks to act as author" in page.content
    assert "form-action 'self' http://localhost:33418" in page["Content-Security-Policy"]
    # PKCE is required, and its plain method refused: S256 only.
    for refused in (plain, without):
        assert refused.status_code == 400
        assert b"PKCE is required, with code_challenge_method &quot;S256&quot;" in refused.content


def test_an_oauth_token_acts_as_the_person_on_the_api(author, client):
    me = client.get("/api/v1/me", headers={"Authorization": f"Bearer {granted(author)}"})

    assert me.status_code == 200
    assert (me.json()["username"], me.json()["auth"]) == ("author", "oauth")


def test_expired_unscoped_revoked_and_inactive_users_oauth_tokens_are_refused_at_mcp(
    author, make_user
):
    expired = granted(author, expires_in=-1)
    unscoped = granted(author, scope="read")
    revoked = granted(author)
    checksum = hashlib.sha256(revoked.encode()).hexdigest()
    AccessToken.objects.get(token_checksum=checksum).revoke()
    gone = make_user("gone", "author", is_active=False)

    for token in (expired, unscoped, revoked, granted(gone)):
        status, headers, body = raw_post(
            endpoint(), {**MCP_HEADERS, "Authorization": f"Bearer {token}"}, path="/mcp/gateway"
        )

        assert status == 401, token
        assert headers["www-authenticate"] == (
            'Bearer realm="forge", error="invalid_token", resource_metadata='
            '"http://testserver/.well-known/oauth-protected-resource/mcp/gateway"'
        )
        assert body == {"detail": "Invalid or revoked API token", "code": "not_authenticated"}


def test_a_viewers_oauth_token_is_refused_what_a_viewers_api_token_is(
    viewer, approved_version, token_for, runner_calls
):
    ids = {"plan_id": approved_version.plan_id, "version": approved_version.number}

    def refusals(token: str) -> list[Any]:
        submitted = call(token, "submit_plan", {"name": "Mine", "document": document()})
        started = call(token, "start_run", ids)
        return [answer(result)["error"] for result in (submitted, started)]

    by_oauth, by_api_token = refusals(granted(viewer)), refusals(token_for(viewer))

    assert by_oauth == by_api_token
    assert [error["code"] for error in by_oauth] == ["permission_denied", "permission_denied"]
    assert Plan.objects.count() == 1
    assert not Run.objects.exists()
    assert runner_calls == []


def test_an_agent_with_its_persons_oauth_token_is_the_author_and_cannot_approve(make_user, client):
    ada = make_user("ada", "author", "approver", "operator")
    token = granted(ada)

    submitted = answer(call(token, "submit_plan", {"name": "Risk", "document": document()}))
    own = client.post(
        f"/api/v1/plans/{submitted['plan_id']}/versions/{submitted['version']}/approve",
        {"comment": "fine by me"},
        content_type="application/json",
        headers={"Authorization": f"Bearer {token}"},
    )

    assert (submitted["status"], submitted["author"]) == ("awaiting_approval", "ada")
    assert (own.status_code, own.json()["code"]) == (403, "permission_denied")


def test_the_code_flow_in_one_process_issues_an_audited_token_that_acts_as_the_person(
    author, session_client, client
):
    registered = client.post(
        "/oauth/register/", HOST_METADATA, content_type="application/json"
    ).json()
    verifier = "v" * 64
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest())
    browser = session_client(author)
    page = browser.get(
        "/oauth/authorize/",
        {
            "response_type": "code",
            "client_id": registered["client_id"],
            "redirect_uri": HOST_METADATA["redirect_uris"][0],
            "state": "st",
            "code_challenge": challenge.rstrip(b"=").decode(),
            "code_challenge_method": "S256",
            "scope": "mcp",
        },
    )
    fields = {
        name: page.context["form"][name].value() or ""
        for name in page.context["form"].fields
        if page.context["form"][name].is_hidden
    }
    csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.content.decode())
    assert csrf is not None
    fields["csrfmiddlewaretoken"] = csrf[1]

    allowed = browser.post("/oauth/authorize/", {**fields, "allow": "Authorize"})
    back = parse_qs(urlsplit(allowed["Location"]).query)
    exchange = {
        "grant_type": "authorization_code",
        "code": back["code"][0],
        "redirect_uri": HOST_METADATA["redirect_uris"][0],
        "client_id": registered["client_id"],
    }
    wrong = client.post("/oauth/token/", {**exchange, "code_verifier": "w" * 64})
    issued = client.post("/oauth/token/", {**exchange, "code_verifier": verifier})
    replayed = client.post("/oauth/token/", {**exchange, "code_verifier": verifier})

    assert back["state"] == ["st"]
    assert (wrong.status_code, wrong.json()["error"]) == (400, "invalid_grant")
    assert issued.status_code == 200, issued.content
    assert (replayed.status_code, replayed.json()["error"]) == (400, "invalid_grant")
    token = issued.json()
    assert (token["token_type"], token["scope"], token["expires_in"]) == ("Bearer", "mcp", 3600)
    me = client.get("/api/v1/me", headers={"Authorization": f"Bearer {token['access_token']}"})
    assert (me.json()["username"], me.json()["auth"]) == ("author", "oauth")
    event = AuditEvent.objects.get(action="oauth.token_issued")
    assert (event.actor, event.object_id) == ("author", registered["client_id"])
    assert (event.payload["client_name"], event.payload["scope"]) == ("Some MCP host", "mcp")
    # A refresh gives a new access token and a new refresh token; the old one is spent,
    # and replaying it revokes the family (RFC 9700 4.14.2): the new tokens too.
    refresh = {
        "grant_type": "refresh_token",
        "refresh_token": token["refresh_token"],
        "client_id": registered["client_id"],
    }
    refreshed = client.post("/oauth/token/", refresh)
    assert refreshed.status_code == 200, refreshed.content
    assert refreshed.json()["refresh_token"] != token["refresh_token"]
    fresh = {"Authorization": f"Bearer {refreshed.json()['access_token']}"}
    assert client.get("/api/v1/me", headers=fresh).json()["username"] == "author"
    replayed = client.post("/oauth/token/", refresh)
    assert (replayed.status_code, replayed.json()["error"]) == (400, "invalid_grant")
    assert client.get("/api/v1/me", headers=fresh).status_code == 401
    assert AuditEvent.objects.filter(action="oauth.token_issued").count() == 2


def test_a_person_who_denies_sends_the_host_back_with_access_denied_and_no_code(
    author, session_client, client
):
    registered = client.post(
        "/oauth/register/", HOST_METADATA, content_type="application/json"
    ).json()
    browser = session_client(author)
    page = browser.get(
        "/oauth/authorize/",
        {
            "response_type": "code",
            "client_id": registered["client_id"],
            "redirect_uri": HOST_METADATA["redirect_uris"][0],
            "state": "st",
            "code_challenge": "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGKSWbwMzg",
            "code_challenge_method": "S256",
            "scope": "mcp",
        },
    )
    fields = {
        name: page.context["form"][name].value() or ""
        for name in page.context["form"].fields
        if page.context["form"][name].is_hidden
    }
    csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.content.decode())
    assert csrf is not None

    denied = browser.post("/oauth/authorize/", {**fields, "csrfmiddlewaretoken": csrf[1]})

    back = parse_qs(urlsplit(denied["Location"]).query)
    assert denied["Location"].startswith(HOST_METADATA["redirect_uris"][0] + "?")
    assert back["error"] == ["access_denied"]
    assert "code" not in back
    assert not AccessToken.objects.filter(user__isnull=False).exists()


def test_someone_not_signed_in_is_sent_to_the_login_page_and_back(client):
    query = "response_type=code&client_id=x&code_challenge_method=S256"

    response = client.get(f"/oauth/authorize/?{query}")

    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/?next=/oauth/authorize/")
