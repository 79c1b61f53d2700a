"""Who may do what with plans: every role against every operation, on the server."""

from __future__ import annotations

import pytest

from plans.models import Plan, PlanVersion

pytestmark = pytest.mark.django_db

ROLES = ("viewer", "author", "approver", "operator", "admin", "auditor", "stranger", "anonymous")
READERS = {"viewer": 200, "author": 200, "approver": 200, "operator": 200, "admin": 200}
# The auditor reads the trail, never plans (their arguments) nor the tool catalogue.
AUDIT_READERS = {**READERS, "auditor": 200}
AUTHORS = {"author": 201, "admin": 201}
COMPILERS = {"author": 200, "admin": 200}
# The version under review is by "author": even holding plan.approve, they could not.
REVIEWERS = {"approver": 200, "admin": 200}
EVERYONE = {role: 200 for role in ROLES if role != "anonymous"}

# (method, path, body, statuses of the roles allowed); every other role gets 403,
# anonymous callers 401.
OPERATIONS = {
    "list plans": ("get", "/plans", None, READERS),
    "get plan": ("get", "/plans/{plan}", None, READERS),
    "list versions": ("get", "/plans/{plan}/versions", None, READERS),
    "get version": ("get", "/plans/{plan}/versions/1", None, READERS),
    "diff": ("get", "/plans/{plan}/diff?from=1&to=1", None, READERS),
    "export": ("get", "/plans/{plan}/versions/1/export?format=mermaid", None, READERS),
    "import plan": ("post", "/plans", {"name": "n", "document": "{document}"}, AUTHORS),
    "save version": ("post", "/plans/{plan}/versions", {"document": "{document}"}, AUTHORS),
    "compile": ("post", "/compile", {"document": "{document}"}, COMPILERS),
    "approve": ("post", "/plans/{plan}/versions/1/approve", {"comment": "ok"}, REVIEWERS),
    "reject": ("post", "/plans/{plan}/versions/1/reject", {"comment": "no"}, REVIEWERS),
    "tools": ("get", "/tools", None, READERS),
    "audit": ("get", "/audit", None, AUDIT_READERS),
    "audit values": ("get", "/audit/values", None, AUDIT_READERS),
    "me": ("get", "/me", None, EVERYONE),
}


def expected_status(operation, role):
    allowed = OPERATIONS[operation][3]
    if role == "anonymous":
        return 401
    return allowed.get(role, 403)


@pytest.fixture
def call(request, api_client, anonymous_client, make_plan, author, plan_document):
    version = make_plan(author)

    def call(operation, role):
        method, path, body, _ = OPERATIONS[operation]
        if role == "anonymous":
            client = anonymous_client
        else:
            client = api_client(request.getfixturevalue(role))
        url = "/api/v1" + path.format(plan=version.plan_id)
        if method == "get":
            return client.get(url)
        if body is not None:
            body = {k: plan_document() if v == "{document}" else v for k, v in body.items()}
        return client.post(url, body or {}, content_type="application/json")

    return call


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("operation", OPERATIONS)
def test_each_role_may_do_exactly_what_its_permissions_grant(call, operation, role):
    response = call(operation, role)

    assert response.status_code == expected_status(operation, role), response.content
    if response.status_code == 401:
        assert response.json() == {"detail": "Authentication required", "code": "not_authenticated"}
    if response.status_code == 403:
        assert response.json()["code"] == "permission_denied"


def test_a_viewer_cannot_import_a_plan(api_client, viewer, plan_document):
    response = api_client(viewer).post(
        "/api/v1/plans", {"name": "n", "document": plan_document()}, content_type="application/json"
    )

    assert response.status_code == 403
    assert response.json() == {
        "detail": "This needs the plan.create permission, which the author and admin roles grant",
        "code": "permission_denied",
    }
    assert Plan.objects.count() == 0


def test_an_approver_who_authored_the_version_cannot_approve_it(api_client, make_user, make_plan):
    both = make_user("both", "author", "approver")
    version = make_plan(both)

    response = api_client(both).post(
        f"/api/v1/plans/{version.plan_id}/versions/1/approve", {}, content_type="application/json"
    )

    assert response.status_code == 403
    assert response.json()["detail"] == "Authors cannot approve their own versions"
    assert not PlanVersion.objects.get(pk=version.pk).approvals.exists()


def test_an_admin_cannot_approve_their_own_version_either(api_client, admin, make_plan):
    version = make_plan(admin)

    response = api_client(admin).post(
        f"/api/v1/plans/{version.plan_id}/versions/1/approve", {}, content_type="application/json"
    )

    assert response.status_code == 403


# --- Session writes need CSRF, bearer writes do not ------------------------------------


def csrf_token_of(client):
    client.get("/accounts/tokens/")  # any page with a form sets the CSRF cookie
    return client.cookies["csrftoken"].value


def test_a_session_write_without_a_csrf_token_is_refused(session_client, author, plan_document):
    client = session_client(author)

    response = client.post(
        "/api/v1/plans", {"name": "n", "document": plan_document()}, content_type="application/json"
    )

    assert response.status_code == 403
    assert response.json() == {"detail": "CSRF token missing or incorrect", "code": "csrf_failed"}
    assert Plan.objects.count() == 0


def test_a_session_write_with_the_csrf_token_is_accepted(session_client, author, plan_document):
    client = session_client(author)

    response = client.post(
        "/api/v1/plans",
        {"name": "n", "document": plan_document()},
        content_type="application/json",
        headers={"x-csrftoken": csrf_token_of(client)},
    )

    assert response.status_code == 201


def test_a_session_approval_needs_the_csrf_token_too(session_client, approver, author, make_plan):
    version = make_plan(author)
    client = session_client(approver)
    path = f"/api/v1/plans/{version.plan_id}/versions/1/approve"

    refused = client.post(path, {}, content_type="application/json")
    accepted = client.post(
        path, {}, content_type="application/json", headers={"x-csrftoken": csrf_token_of(client)}
    )

    assert (refused.status_code, accepted.status_code) == (403, 200)


def test_a_session_read_needs_no_csrf_token(session_client, viewer):
    assert session_client(viewer).get("/api/v1/plans").status_code == 200


def test_a_bearer_write_needs_no_csrf_token(token_for, author, plan_document, client):
    client = type(client)(
        enforce_csrf_checks=True, headers={"authorization": f"Bearer {token_for(author)}"}
    )

    response = client.post(
        "/api/v1/plans", {"name": "n", "document": plan_document()}, content_type="application/json"
    )

    assert response.status_code == 201


def test_an_anonymous_write_is_a_401_not_a_csrf_403(anonymous_client, plan_document):
    response = anonymous_client.post(
        "/api/v1/compile", {"document": plan_document()}, content_type="application/json"
    )

    assert response.status_code == 401


def test_a_page_refused_says_which_roles_grant_it_and_which_the_user_has(auditor, client):
    client.force_login(auditor)

    response = client.get("/plans/")

    assert response.status_code == 403
    body = response.content.decode()
    assert (
        "This needs the plan.view permission, which the viewer, author, approver, operator "
        "and admin roles grant"
    ) in body
    assert f"signed in as <strong>{auditor.username}</strong>, with the role auditor." in body
