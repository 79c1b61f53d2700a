"""Dynamic client registration (RFC 7591) of MCP hosts, public clients only.

django-oauth-toolkit's registration view does the registering; this view first holds a
request to what Forge admits, so that open registration (an MCP host registers itself
before anyone has signed in) cannot mint a client that acts without a person: the
authorization code grant (with refresh tokens) only, no client secret
(``token_endpoint_auth_method`` ``none``, also when the host names none, where RFC 7591
would default to a secret), and redirect URIs that are ``https`` or ``http`` on a
loopback address (RFC 8252's native apps), absolute, without a fragment or user
information. A refusal is RFC 7591's error object naming the field and what to send.
Registration needs no one signed in, so each address may register
``FORGE_OAUTH_REGISTRATION_RATE`` times (429 with ``Retry-After`` beyond), counted as
the API's rates are (``accounts.throttling``).
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlsplit

from django.contrib.auth.decorators import login_not_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST
from oauth2_provider.views import DynamicClientRegistrationView

from accounts.throttling import SettingRateThrottle, throttled

__all__ = ["register", "registration_problem"]

GRANT_TYPES = frozenset({"authorization_code", "refresh_token"})
LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})
MAX_REDIRECT_URIS = 10


def registration_problem(metadata: Any) -> tuple[str, str] | None:
    """Why Forge refuses to register ``metadata`` (RFC 7591 error code, description),
    or None."""
    if not isinstance(metadata, dict):
        return "invalid_client_metadata", "The body must be a JSON object of client metadata"
    method = metadata.get("token_endpoint_auth_method", "none")
    if method != "none":
        return "invalid_client_metadata", (
            f"token_endpoint_auth_method {method!r} is not offered: Forge registers public "
            'clients only, with "none" (PKCE stands in for a client secret)'
        )
    grants = metadata.get("grant_types", ["authorization_code"])
    if not (isinstance(grants, list) and "authorization_code" in grants) or not set(
        grants
    ) <= GRANT_TYPES:
        return "invalid_client_metadata", (
            'grant_types must include "authorization_code" and may add "refresh_token", '
            f"nothing else (got {grants!r})"
        )
    responses = metadata.get("response_types", ["code"])
    if responses != ["code"]:
        return "invalid_client_metadata", f'response_types must be ["code"] (got {responses!r})'
    uris = metadata.get("redirect_uris")
    if not (isinstance(uris, list) and uris):
        return "invalid_redirect_uri", "redirect_uris must be a non-empty array of URLs"
    if len(uris) > MAX_REDIRECT_URIS:
        return "invalid_redirect_uri", f"at most {MAX_REDIRECT_URIS} redirect_uris"
    for uri in uris:
        if (problem := redirect_uri_problem(uri)) is not None:
            return "invalid_redirect_uri", problem
    return None


def redirect_uri_problem(uri: Any) -> str | None:
    """Why ``uri`` cannot be a redirect URI here, or None."""
    if not isinstance(uri, str) or not uri or len(uri) > 2000 or not uri.isascii():
        return f"{uri!r} is not a URL: each redirect URI is an ASCII string of at most 2000"
    try:
        parts = urlsplit(uri)
        host = parts.hostname
    except ValueError:
        return f"{uri!r} is not a URL"
    if parts.fragment or "#" in uri:
        return f"{uri!r} has a fragment, which a redirect URI must not have (RFC 6749 3.1.2)"
    if parts.username is not None or parts.password is not None:
        return f"{uri!r} carries user information"
    if parts.scheme == "https" and host:
        return None
    if parts.scheme == "http" and host in LOOPBACK_HOSTS:
        return None
    return (
        f"{uri!r} is neither https nor http on a loopback address (localhost, 127.0.0.1, "
        "[::1]): the code it carries would cross the network in clear"
    )


class RegistrationRateThrottle(SettingRateThrottle):
    """Registrations asked for, refused ones included, per client address."""

    scope = "oauth_registration"
    setting = "FORGE_OAUTH_REGISTRATION_RATE"

    def ident(self, request: HttpRequest) -> str | None:
        return request.META.get("REMOTE_ADDR") or None


_REGISTRATIONS = RegistrationRateThrottle()


@csrf_exempt
@login_not_required
@require_POST
def register(request: HttpRequest) -> HttpResponse:
    """POST a client's metadata (RFC 7591); 201 with its ``client_id``, else 400 (429
    past the address's rate)."""
    if not _REGISTRATIONS.allow_request(request):
        return throttled(_REGISTRATIONS.wait() or 1.0)
    try:
        metadata = json.loads(request.body)
    except (ValueError, UnicodeDecodeError):
        metadata = None
    if (problem := registration_problem(metadata)) is not None:
        error, description = problem
        return JsonResponse({"error": error, "error_description": description}, status=400)
    # Public is what Forge registers even when the host names no method (the library
    # would make it a confidential client with a secret the host never uses).
    metadata["token_endpoint_auth_method"] = "none"
    request._body = json.dumps(metadata).encode()  # what the library's view reads
    return DynamicClientRegistrationView.as_view()(request)  # type: ignore[no-any-return]
