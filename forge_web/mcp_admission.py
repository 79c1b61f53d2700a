"""Whether an HTTP request to ``/mcp`` or ``/mcp/gateway`` with a bearer token may go on:
the checks the API makes of such a request, made in process with the API's own parts.

Each request to the MCP endpoints used to be checked by a whole ``GET /api/v1/me`` sent
into Django, 7 ms of the gateway's cost per call (docs/benchmarks.md, "The gateway's
cost per call"). ``admit`` makes the same checks in the order a request to the API
meets them (its middleware, then ninja's authentication and throttle) and answers each
refusal as the API answers it:

1. HTTPS: Django's ``SecurityMiddleware`` (``SECURE_SSL_REDIRECT``), its redirect.
2. An address whose tokens were refused past ``FORGE_API_ANON_RATE``: 429 ``throttled``
   before the token is read (``accounts.throttling``).
3. The host, one of ``ALLOWED_HOSTS`` (``HttpRequest.get_host``, as Django's
   ``CommonMiddleware`` asks it): 400.
4. The token (``accounts.auth.bearer_user``: a Forge API token or an OAuth access
   token, live, of an active user): 401 ``not_authenticated``, counted against the
   address as the API's 401s are.
5. The person's rate, ``FORGE_API_RATE``, one allowance with their API calls: 429
   ``throttled`` with ``Retry-After``.

A database that is away is 503 ``database_unavailable`` with ``Retry-After``
(``forge_web.outages``). Call it in the request's own thread, as Django runs a request:
it reads the database and the cache, and its connection stays open for the rest of the
request (the gateway call reuses it), which closes it at its end (``forge_web.mcp``).
The user it admits is the one the request acts as to its end, as an API request's
``request.auth`` is: ``/mcp/gateway``'s calls run as that user (``forge_web.mcp_gateway``).
"""

from __future__ import annotations

from io import BytesIO
from typing import Any

from asgiref.typing import Scope
from django.core.exceptions import DisallowedHost
from django.core.handlers.asgi import ASGIRequest
from django.db import DatabaseError, close_old_connections
from django.http import HttpResponse
from django.middleware.security import SecurityMiddleware

from accounts.auth import INVALID_TOKEN, bearer_user
from accounts.models import User
from accounts.outages import note_database_failure
from accounts.throttling import REFUSALS, PersonRateThrottle, throttled
from forge_web.api import error
from forge_web.outages import database_unavailable

__all__ = ["admit"]

_PERSON_RATE = PersonRateThrottle()


def admit(scope: Scope, token: str) -> User | HttpResponse:
    """The user this request with ``token`` acts as, or the API's refusal of it."""
    request = ASGIRequest(scope, BytesIO())
    close_old_connections()  # as at a request's start: a broken or old connection goes
    try:
        return _admitted(request, token)
    except DisallowedHost:
        return error(request, 400, "Bad Request", "bad_request")
    except DatabaseError as failure:
        if not note_database_failure(failure):
            raise
        return database_unavailable(request)


def _admitted(request: ASGIRequest, token: str) -> User | HttpResponse:
    redirect = SecurityMiddleware(_no_view).process_request(request)
    if redirect is not None:
        return redirect
    wait = REFUSALS.blocked(request)
    if wait is not None:
        return throttled(wait)
    request.get_host()  # DisallowedHost for a host outside ALLOWED_HOSTS
    user = bearer_user(token)
    if user is None:
        REFUSALS.allow_request(request)  # counts this refusal against the address
        return error(request, 401, INVALID_TOKEN, "not_authenticated")
    request.user = user
    if not _PERSON_RATE.allow_request(request):
        return throttled(_PERSON_RATE.wait() or 1.0)
    return user


def _no_view(request: Any) -> HttpResponse:
    raise AssertionError("SecurityMiddleware is asked only for its redirect")
