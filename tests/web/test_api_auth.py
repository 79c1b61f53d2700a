"""The API's front door: who may call it, CSRF, tokens, /me and the shape of errors."""

from __future__ import annotations

import json

import pytest
from django.core.exceptions import PermissionDenied, RequestDataTooBig
from django.core.serializers.json import DjangoJSONEncoder
from django.http import Http404
from django.test import RequestFactory
from ninja.errors import ValidationError

from accounts import tokens as token_format
from accounts.models import ApiToken
from accounts.roles import refusal
from forge.errors import ForgeError, PlanDocumentError
from forge_web import api as api_module

pytestmark = pytest.mark.django_db

NOT_AUTHENTICATED = {"detail": "Authentication required", "code": "not_authenticated"}
BAD_TOKEN = {"detail": "Invalid or revoked API token", "code": "not_authenticated"}
CSRF_FAILED = {"detail": "CSRF token missing or incorrect", "code": "csrf_failed"}


def json_time(moment):
    return DjangoJSONEncoder().default(moment)


def csrf_token_of(client):
    client.get("/accounts/tokens/")  # any page with a form sets the CSRF cookie
    return client.cookies["csrftoken"].value


# --- Anonymous callers ------------------------------------------------------------------


def test_an_anonymous_read_is_refused_with_401_json(anonymous_client):
    response = anonymous_client.get("/api/v1/me")

    assert response.status_code == 401
    assert response.json() == NOT_AUTHENTICATED
    assert response["WWW-Authenticate"] == 'Bearer realm="forge"'


def test_an_anonymous_write_is_refused_with_401_not_a_csrf_403(anonymous_client):
    response = anonymous_client.post(
        "/api/v1/tokens", {"name": "x"}, content_type="application/json"
    )

    assert response.status_code == 401
    assert response.json() == NOT_AUTHENTICATED
    assert ApiToken.objects.count() == 0


def test_an_unknown_api_path_is_a_json_404(anonymous_client):
    response = anonymous_client.get("/api/v1/no/such/thing")

    assert response.status_code == 404
    assert response.json() == {"detail": "Not found", "code": "not_found"}


def test_the_openapi_document_and_docs_are_served(anonymous_client):
    schema = anonymous_client.get("/api/v1/openapi.json")
    docs = anonymous_client.get("/api/v1/docs")

    assert schema.status_code == 200
    assert schema.json()["info"]["version"] == "1"
    assert {"/api/v1/me", "/api/v1/audit", "/api/v1/audit/verify"} <= set(schema.json()["paths"])
    assert docs.status_code == 200
    assert b"swagger-ui" in docs.content
    assert b"<script>" not in docs.content  # served from our static files, no inline code
    assert "script-src 'self';" in docs["Content-Security-Policy"]
    assert "style-src 'self' 'unsafe-inline';" in docs["Content-Security-Policy"]


# --- Bearer tokens ----------------------------------------------------------------------


def test_a_bearer_token_identifies_its_user(api_client, author):
    response = api_client(author).get("/api/v1/me")

    assert response.status_code == 200
    assert response.json() == {
        "id": author.pk,
        "username": "author",
        "roles": ["author"],
        "effective_roles": ["author", "viewer"],
        "permissions": [
            "audit.view",
            "evaluation.upload",
            "evaluation.view",
            "metrics.view",
            "plan.compile",
            "plan.create",
            "plan.edit",
            "plan.view",
            "review.comment",
            "run.view",
            "tool.view",
        ],
        "teams": [],
        "auth": "token",
    }


def test_me_lists_every_permission_for_an_admin(api_client, admin):
    body = api_client(admin).get("/api/v1/me").json()

    assert body["roles"] == ["admin"]
    assert body["effective_roles"] == [
        "admin",
        "approver",
        "auditor",
        "author",
        "operator",
        "viewer",
    ]
    assert "user.manage" in body["permissions"] and "run.reconcile" in body["permissions"]


def test_a_bearer_write_needs_no_csrf_token(token_for, author, client):
    client = type(client)(
        enforce_csrf_checks=True, headers={"authorization": f"Bearer {token_for(author)}"}
    )

    response = client.post("/api/v1/tokens", {"name": "deploy"}, content_type="application/json")

    assert response.status_code == 201
    assert ApiToken.objects.filter(user=author, name="deploy").count() == 1


def test_an_unknown_token_is_refused_even_with_a_valid_session(session_client, author):
    client = session_client(author)
    forged = "forge_0123456789ab_" + "A" * 43

    response = client.get("/api/v1/me", headers={"authorization": f"Bearer {forged}"})

    assert response.status_code == 401
    assert response.json() == BAD_TOKEN


@pytest.mark.parametrize("value", ["", "nonsense", "forge_short_x", "Basic abc"])
def test_a_malformed_authorization_header_is_refused(anonymous_client, value):
    response = anonymous_client.get("/api/v1/me", headers={"authorization": value})

    assert response.status_code == 401


def test_a_wrong_secret_with_a_real_prefix_is_refused(token_for, author, anonymous_client):
    prefix, _ = token_format.parse(token_for(author))
    guess = f"forge_{prefix}_" + "B" * 43

    response = anonymous_client.get("/api/v1/me", headers={"authorization": f"Bearer {guess}"})

    assert response.status_code == 401
    assert response.json() == BAD_TOKEN


def test_a_token_of_a_deactivated_user_is_refused(token_for, author, anonymous_client):
    value = token_for(author)
    author.is_active = False
    author.save()

    response = anonymous_client.get("/api/v1/me", headers={"authorization": f"Bearer {value}"})

    assert response.status_code == 401


def test_using_a_token_records_when_it_was_last_used(token_for, author, anonymous_client):
    value = token_for(author)

    anonymous_client.get("/api/v1/me", headers={"authorization": f"Bearer {value}"})

    assert ApiToken.objects.get(user=author).last_used_at is not None


# --- Sessions and CSRF ------------------------------------------------------------------


def test_a_session_read_needs_no_csrf_token(session_client, viewer):
    response = session_client(viewer).get("/api/v1/me")

    assert response.status_code == 200
    assert response.json()["auth"] == "session"


def test_a_session_write_without_csrf_token_is_refused(session_client, author):
    response = session_client(author).post(
        "/api/v1/tokens", {"name": "x"}, content_type="application/json"
    )

    assert response.status_code == 403
    assert response.json() == CSRF_FAILED
    assert ApiToken.objects.count() == 0


def test_a_session_write_with_a_wrong_csrf_token_is_refused(session_client, author):
    client = session_client(author)
    csrf_token_of(client)

    response = client.post(
        "/api/v1/tokens",
        {"name": "x"},
        content_type="application/json",
        headers={"x-csrftoken": "x" * 32},
    )

    assert response.status_code == 403
    assert response.json() == CSRF_FAILED


def test_a_session_write_with_the_csrf_token_succeeds(session_client, author):
    client = session_client(author)
    csrf = csrf_token_of(client)

    response = client.post(
        "/api/v1/tokens",
        {"name": "laptop"},
        content_type="application/json",
        headers={"x-csrftoken": csrf},
    )

    assert response.status_code == 201
    assert ApiToken.objects.get().name == "laptop"


# --- Tokens through the API -------------------------------------------------------------


def test_creating_a_token_shows_it_once_and_stores_only_its_digest(api_client, author):
    client = api_client(author)

    response = client.post("/api/v1/tokens", {"name": "ci"}, content_type="application/json")

    assert response.status_code == 201
    body = response.json()
    stored = ApiToken.objects.get(name="ci")
    prefix, secret = token_format.parse(body["token"])
    assert body == {
        "id": stored.pk,
        "name": "ci",
        "prefix": prefix,
        "created_at": json_time(stored.created_at),
        "last_used_at": None,
        "revoked_at": None,
        "token": f"forge_{prefix}_{secret}",
    }
    assert stored.prefix == prefix
    assert stored.digest == token_format.digest(secret)
    assert secret not in json.dumps(list(ApiToken.objects.values()), cls=DjangoJSONEncoder)
    listed = client.get("/api/v1/tokens").json()
    assert "token" not in listed["items"][0]


def test_a_new_token_works_at_once(api_client, author, anonymous_client):
    value = (
        api_client(author)
        .post("/api/v1/tokens", {"name": "ci"}, content_type="application/json")
        .json()["token"]
    )

    response = anonymous_client.get("/api/v1/me", headers={"authorization": f"Bearer {value}"})

    assert response.status_code == 200
    assert response.json()["username"] == "author"


def test_a_token_name_is_required(api_client, author):
    response = api_client(author).post(
        "/api/v1/tokens", {"name": ""}, content_type="application/json"
    )

    assert response.status_code == 422
    body = response.json()
    assert body["code"] == "validation_error"
    assert body["detail"] == f"Invalid request: name: {body['errors'][0]['msg']}"
    assert body["errors"][0]["loc"] == ["body", "name"]


def test_a_revoked_token_is_refused_with_401(api_client, token_for, author, anonymous_client):
    value = token_for(author, "old")
    token = ApiToken.objects.get(name="old")

    response = api_client(author).post(f"/api/v1/tokens/{token.pk}/revoke")

    assert response.status_code == 200
    token.refresh_from_db()
    assert response.json()["revoked_at"] == json_time(token.revoked_at)
    refused = anonymous_client.get("/api/v1/me", headers={"authorization": f"Bearer {value}"})
    assert refused.status_code == 401
    assert refused.json() == BAD_TOKEN


def test_a_token_cannot_revoke_itself_twice_or_change_its_revocation_time(api_client, author):
    client = api_client(author)
    token = ApiToken.objects.create(user=author, name="x", prefix="aaaaaaaaaaaa", digest="0" * 64)
    first = client.post(f"/api/v1/tokens/{token.pk}/revoke").json()["revoked_at"]

    second = client.post(f"/api/v1/tokens/{token.pk}/revoke")

    assert second.status_code == 200
    assert second.json()["revoked_at"] == first


def test_users_cannot_see_or_revoke_each_others_tokens(api_client, token_for, author, stranger):
    token_for(author, "mine")
    token = ApiToken.objects.get(name="mine")
    client = api_client(stranger)

    listed = client.get("/api/v1/tokens").json()
    response = client.post(f"/api/v1/tokens/{token.pk}/revoke")

    assert [item["name"] for item in listed["items"]] == ["test"]
    assert response.status_code == 404
    assert response.json() == {"detail": "Not found", "code": "not_found"}
    token.refresh_from_db()
    assert token.revoked_at is None


def test_token_lists_are_paginated(api_client, author, settings):
    client = api_client(author)
    for number in range(3):
        client.post("/api/v1/tokens", {"name": f"t{number}"}, content_type="application/json")

    first = client.get("/api/v1/tokens?page=1&page_size=2").json()
    second = client.get("/api/v1/tokens?page=2&page_size=2").json()

    assert first["count"] == 4 and second["count"] == 4
    assert [item["name"] for item in first["items"]] == ["t2", "t1"]
    assert [item["name"] for item in second["items"]] == ["t0", "test"]


# --- Roles ------------------------------------------------------------------------------


def test_a_user_without_roles_may_call_me_but_not_read_the_audit(api_client, stranger):
    client = api_client(stranger)

    me = client.get("/api/v1/me")
    audit = client.get("/api/v1/audit")

    assert me.status_code == 200
    assert me.json()["permissions"] == []
    assert audit.status_code == 403
    assert audit.json() == {
        "detail": refusal("audit.view"),
        "code": "permission_denied",
    }


# --- Error mapping ----------------------------------------------------------------------


def _handle(exc):
    request = RequestFactory().get("/api/v1/anything")
    response = api_module.api.on_exception(request, exc)
    return response.status_code, json.loads(response.content)


def test_a_forge_error_answers_400_with_its_code():
    assert _handle(PlanDocumentError("steps: too many", code="too_many_steps")) == (
        400,
        {"detail": "steps: too many", "code": "too_many_steps"},
    )


def test_a_forge_error_carrying_diagnostics_returns_them():
    exc = ForgeError("plan does not compile", code="compile_failed")
    exc.diagnostics = [
        {
            "code": "cycle",
            "severity": "error",
            "message": "a -> b -> a",
            "nodes": ["a", "b"],
            "edges": [["a", "b"]],
        }
    ]

    assert _handle(exc) == (
        400,
        {
            "detail": "plan does not compile",
            "code": "compile_failed",
            "diagnostics": exc.diagnostics,
        },
    )


def test_a_forge_error_can_be_given_another_status(monkeypatch):
    monkeypatch.setitem(api_module.FORGE_ERROR_STATUS, PlanDocumentError, 413)

    assert _handle(PlanDocumentError("too big", code="too_large"))[0] == 413


def test_permission_denied_answers_403():
    assert _handle(PermissionDenied("no")) == (403, {"detail": "no", "code": "permission_denied"})


def test_http404_answers_404_without_details():
    assert _handle(Http404("secret table name")) == (
        404,
        {"detail": "Not found", "code": "not_found"},
    )


def test_a_validation_error_keeps_422_with_its_errors():
    errors = [{"loc": ["query", "page"], "msg": "bad"}]

    assert _handle(ValidationError(errors)) == (
        422,
        {"detail": "Invalid request: page: bad", "code": "validation_error", "errors": errors},
    )


def test_a_validation_error_says_its_problems_and_each_one_where_the_request_has_it():
    errors = [{"loc": ["body", "body", "steps", 0, "id"], "msg": f"bad {n}"} for n in range(5)]

    status, body = _handle(ValidationError(errors))

    assert status == 422
    assert [item["loc"] for item in body["errors"]] == [["body", "steps", 0, "id"]] * 5
    assert body["detail"] == (
        "Invalid request: steps.0.id: bad 0; steps.0.id: bad 1; steps.0.id: bad 2 (and 2 more)"
    )


def test_a_request_without_a_body_where_one_is_needed_is_said_so(api_client, author):
    response = api_client(author).post("/api/v1/tokens", "", content_type="application/json")

    assert response.status_code == 422
    assert response.json()["detail"] == "Invalid request: body: Field required"
    assert response.json()["errors"][0]["loc"] == ["body"]


def test_an_oversized_body_answers_413():
    assert _handle(RequestDataTooBig("big")) == (
        413,
        {"detail": "Request body too large", "code": "request_too_large"},
    )


def test_an_unexpected_exception_answers_500_without_a_trace(settings):
    settings.DEBUG = True  # not even in DEBUG

    status, body = _handle(RuntimeError("database password is hunter2"))

    assert (status, body) == (500, {"detail": "Internal server error", "code": "server_error"})
