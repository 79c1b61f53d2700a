"""How the API knows who is calling: a bearer API token, or the browser's session.

``BearerTokenAuth`` comes first. A request that presents ``Authorization: Bearer ...``
is judged by that token alone: an unknown or revoked token is a 401 even if a session
cookie rides along. Scripts never need a CSRF token. The bearer token is a Forge API
token (``forge_...``) or an access token of Forge's OAuth server that a person granted
an MCP host (``accounts.oauth_tokens``); either acts as its user.

``SessionAuth`` accepts a logged-in session, and for unsafe methods (POST, PUT, PATCH,
DELETE) also demands Django's CSRF token (``X-CSRFToken`` header or form field), else 403
``csrf_failed``. The CSRF check runs only once the session is known to be logged in, so
an anonymous write is a 401, not a 403. Both set ``request.user`` and ``request.auth``.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.http import HttpRequest
from ninja.errors import AuthenticationError, AuthorizationError
from ninja.security import APIKeyCookie, HttpBearer
from ninja.utils import check_csrf

from accounts import tokens
from accounts.models import ApiToken
from accounts.oauth_tokens import live_access_token

# What a request with a token that acts as nobody is told (401 not_authenticated).
INVALID_TOKEN = "Invalid or revoked API token"

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "TRACE"})


class NotAuthenticated(AuthenticationError):
    code = "not_authenticated"

    def __init__(self, message: str = "Authentication required") -> None:
        super().__init__(401, message)


class CsrfFailed(AuthorizationError):
    code = "csrf_failed"

    def __init__(self) -> None:
        super().__init__(403, "CSRF token missing or incorrect")


class BearerTokenAuth(HttpBearer):
    def __call__(self, request: HttpRequest) -> Any:
        header = request.headers.get(self.header, "")
        scheme, _, value = header.partition(" ")
        if scheme.lower() != "bearer":
            return None  # no token presented: let the session decide
        return self.authenticate(request, value.strip())

    def authenticate(self, request: HttpRequest, token: str) -> Any:
        if tokens.parse(token) is None and (granted := live_access_token(token)) is not None:
            request.user = granted.user
            request.oauth_token = granted  # type: ignore[attr-defined]
            return granted.user
        api_token = ApiToken.objects.authenticate(token)
        if api_token is None:
            raise NotAuthenticated(INVALID_TOKEN)
        request.user = api_token.user
        request.api_token = api_token  # type: ignore[attr-defined]
        return api_token.user


def bearer_user(token: str) -> Any:
    """The user ``token`` (an API token or an OAuth access token) acts as, judged as
    ``BearerTokenAuth`` judges it; None for an unknown, expired or revoked token. For
    callers in this process that check a request as the API does, outside ninja
    (``/mcp`` and ``/mcp/gateway``: ``forge_web.mcp_admission``)."""
    if tokens.parse(token) is None and (granted := live_access_token(token)) is not None:
        return granted.user
    api_token = ApiToken.objects.authenticate(token)
    return None if api_token is None else api_token.user


class SessionAuth(APIKeyCookie):
    param_name: str = settings.SESSION_COOKIE_NAME

    def __init__(self) -> None:
        super().__init__(csrf=True)

    def _get_key(self, request: HttpRequest) -> str | None:
        # The base class checks CSRF before it knows whether anyone is logged in;
        # authenticate() does it afterwards so that anonymous callers get a 401.
        return request.COOKIES.get(self.param_name)

    def authenticate(self, request: HttpRequest, key: str | None) -> Any:
        user = getattr(request, "user", None)
        if user is None or not user.is_authenticated:
            return None
        if request.method not in SAFE_METHODS and check_csrf(request) is not None:
            raise CsrfFailed()
        return user
