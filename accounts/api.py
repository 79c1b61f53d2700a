"""The accounts router: who am I, and my API tokens (any logged-in user, no role needed).

No ``from __future__ import annotations`` here: ninja reads the operations' annotations
at runtime, and ``@paginate`` hides this module's names from string annotations.
"""

from typing import Any

from django.http import HttpRequest
from django.shortcuts import get_object_or_404
from ninja import Router, Status
from ninja.pagination import paginate

from accounts import services
from accounts.models import ApiToken, User
from accounts.schemas import MeOut, NewTokenOut, TokenIn, TokenOut
from accounts.teams import teams_of

router = Router(tags=["accounts"])


def _user(request: HttpRequest) -> User:
    return request.auth  # type: ignore[attr-defined,no-any-return]


@router.get("/me", response=MeOut)
def me(request: HttpRequest) -> dict[str, object]:
    user = _user(request)
    return {
        "id": user.pk,
        "username": user.username,
        "roles": sorted(user.roles),
        "effective_roles": sorted(user.effective_roles()),
        "permissions": sorted(user.permissions()),
        "teams": list(teams_of(user)),
        "auth": _how(request),
    }


def _how(request: HttpRequest) -> str:
    """How the caller signed in: an API token, an OAuth access token (an MCP host acting
    with the person's consent) or the browser's session."""
    if hasattr(request, "api_token"):
        return "token"
    return "oauth" if hasattr(request, "oauth_token") else "session"


@router.get("/tokens", response=list[TokenOut])
@paginate
def list_tokens(request: HttpRequest) -> Any:
    return ApiToken.objects.filter(user=_user(request))


@router.post("/tokens", response={201: NewTokenOut})
def create_token(request: HttpRequest, body: TokenIn) -> Status:
    user = _user(request)
    token, value = services.create_token(user, body.name, actor=user.username)
    return Status(201, {**_token_fields(token), "token": value})


@router.post("/tokens/{token_id}/revoke", response=TokenOut)
def revoke_token(request: HttpRequest, token_id: int) -> ApiToken:
    user = _user(request)
    token = get_object_or_404(ApiToken, pk=token_id, user=user)
    return services.revoke_token(token, actor=user.username)


def _token_fields(token: ApiToken) -> dict[str, object]:
    return {field: getattr(token, field) for field in TokenOut.model_fields}
