"""Roles, what they allow, and the checks plans and runs will put on their operations."""

from __future__ import annotations

import itertools

import pytest
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponse
from django.test import RequestFactory
from django.views.defaults import permission_denied
from ninja import NinjaAPI, Router
from ninja.errors import HttpError, ValidationError
from ninja.testing import TestClient

from accounts import roles
from accounts.auth import BearerTokenAuth, SessionAuth
from accounts.permissions import ensure_permission, require_permission, require_role, role_required
from forge_web.api import api as forge_api

pytestmark = pytest.mark.django_db
_names = itertools.count()


def test_admin_acts_with_every_role(admin):
    assert all(admin.has_role(role) for role in roles.ROLES)


def test_every_role_may_read(author, approver, operator):
    assert all(
        user.has_role("viewer") and user.can("plan.view") for user in (author, approver, operator)
    )


def test_an_auditor_reads_the_trail_and_metrics_and_nothing_that_shows_plan_arguments(auditor):
    assert auditor.permissions() == {"audit.view", "audit.verify", "metrics.view"}
    assert not auditor.has_role("viewer")
    assert not auditor.can("plan.view") and not auditor.can("run.view")


def test_an_auditor_who_holds_another_role_reads_as_that_role_does(make_user):
    both = make_user("both", "auditor", "operator")

    assert both.has_role("viewer") and both.can("plan.view") and both.can("audit.verify")


def test_admin_holds_the_auditor_role_too(admin):
    assert admin.has_role("auditor")


def test_a_role_does_not_grant_another(author):
    assert not author.has_role("approver")
    assert not author.can("plan.approve")


def test_a_user_may_hold_several_roles(make_user):
    both = make_user("both", "author", "operator")

    assert both.has_role("author") and both.has_role("operator") and not both.has_role("approver")
    assert {"plan.create", "run.start"} <= both.permissions()


def test_a_user_without_roles_may_do_nothing(stranger):
    assert stranger.permissions() == frozenset()
    assert not stranger.has_role("viewer")


def test_a_superuser_acts_as_admin(make_user):
    root = make_user("root", is_superuser=True)

    assert root.has_role("approver") and root.can("user.manage")


def test_an_inactive_user_has_no_roles(make_user):
    gone = make_user("gone", "admin", is_active=False)

    assert gone.effective_roles() == frozenset()


def test_unknown_role_and_permission_names_are_errors_not_silent_refusals(author):
    with pytest.raises(ValueError, match="unknown role 'auther'"):
        author.has_role("auther")
    with pytest.raises(ValueError, match="unknown permission"):
        author.can("plan.destroy")
    with pytest.raises(ValueError, match="unknown role"):
        require_role("auther")
    with pytest.raises(ValueError, match="unknown role 'root'"):
        author.set_roles(["root"])


def test_set_roles_sorts_and_deduplicates(author):
    author.set_roles(["operator", "author", "operator"])

    assert author.roles == ["author", "operator"]


def test_every_permission_belongs_to_a_role():
    assert roles.ALL_PERMISSIONS == frozenset().union(*roles.PERMISSIONS.values())
    assert set(roles.PERMISSIONS) == set(roles.ROLES) == set(roles.DESCRIPTIONS)


def test_ensure_permission_raises_permission_denied(viewer):
    with pytest.raises(PermissionDenied, match="run.start"):
        ensure_permission(viewer, "run.start")


# --- The ninja decorators, on a throwaway API that maps errors like Forge's -------------


def _client():
    test_api = NinjaAPI(
        urls_namespace=f"roles-test-{next(_names)}", auth=[BearerTokenAuth(), SessionAuth()]
    )
    for exc in (Exception, HttpError, ValidationError, Http404):
        test_api.add_exception_handler(exc, forge_api.on_exception)
    router = Router()

    @router.get("/approve")
    @require_role("approver")
    def approve(request):
        return {"by": request.auth.username}

    @router.get("/start")
    @require_permission("run.start")
    def start(request):
        return {"by": request.auth.username}

    @require_role("author")  # above the route decorator works too
    @router.get("/edit")
    def edit(request):
        return {"by": request.auth.username}

    @router.get("/async")
    @require_role("operator")
    async def run_async(request):
        return {"by": request.auth.username}

    test_api.add_router("", router)
    return TestClient(test_api)


def test_require_role_lets_a_holder_through(approver, admin):
    client = _client()

    assert client.get("/approve", user=approver).json() == {"by": "approver"}
    assert client.get("/approve", user=admin).json() == {"by": "admin"}


def test_require_role_refuses_others_with_403(author):
    response = _client().get("/approve", user=author)

    assert response.status_code == 403
    assert response.json() == {
        "detail": "This needs the approver role",
        "code": "permission_denied",
    }


def test_require_role_refuses_the_anonymous_with_401():
    response = _client().get("/approve")

    assert response.status_code == 401
    assert response.json() == {"detail": "Authentication required", "code": "not_authenticated"}


def test_require_permission_checks_the_permission(operator, viewer):
    client = _client()

    assert client.get("/start", user=operator).status_code == 200
    assert client.get("/start", user=viewer).json() == {
        "detail": "This needs the run.start permission, which the operator and admin roles grant",
        "code": "permission_denied",
    }


def test_require_role_works_above_the_route_decorator(author, viewer):
    client = _client()

    assert client.get("/edit", user=author).status_code == 200
    assert client.get("/edit", user=viewer).status_code == 403


@pytest.mark.asyncio
async def test_require_role_guards_async_operations(operator, viewer):
    from ninja.testing import TestAsyncClient

    client = TestAsyncClient(_client().router_or_app)

    allowed = await client.get("/async", user=operator)
    refused = await client.get("/async", user=viewer)

    assert (allowed.status_code, refused.status_code) == (200, 403)


def test_require_role_is_stated_in_the_openapi_description():
    schema = _client().router_or_app.get_openapi_schema(path_prefix="")

    assert schema["paths"]["/approve"]["get"]["description"] == "Needs role: approver."


# --- Pages ------------------------------------------------------------------------------


def test_role_required_refuses_a_page_to_users_without_the_role(viewer, operator):
    @role_required("operator")
    def page(request):
        return HttpResponse("ok")

    request = RequestFactory().get("/runs/")
    request.user = viewer
    with pytest.raises(PermissionDenied):
        page(request)
    request.user = operator
    assert page(request).content == b"ok"


def test_a_role_refusal_on_a_page_renders_the_403_page(viewer):
    request = RequestFactory().get("/")
    request.user = viewer

    response = permission_denied(request, PermissionDenied("This needs the operator role"))

    assert response.status_code == 403
    assert b"This needs the operator role" in response.content
    assert b"Log out" in response.content  # the site's own page, not Django's bare one


def test_a_refusal_names_the_roles_that_grant_the_permission():
    assert roles.refusal("tool.manage") == (
        "This needs the tool.manage permission, which the admin role grants"
    )
    assert roles.refusal("run.start") == (
        "This needs the run.start permission, which the operator and admin roles grant"
    )
    assert roles.refusal("audit.verify") == (
        "This needs the audit.verify permission, which the operator, admin and auditor roles grant"
    )
