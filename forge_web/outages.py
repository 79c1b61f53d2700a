"""What the web answers while the database is away: 503 with ``Retry-After``, not a 500.

The API's exception handler (``forge_web.api``) and ``handler500`` (every page, and any
request whose error a middleware raised before a view ran) answer 503 with code
``database_unavailable`` and a ``Retry-After`` that grows with the outage
(``forge.outage``): JSON ``{"detail", "code"}`` under ``/api/`` and ``/mcp`` and from
the OAuth endpoints that programs call (token, revocation, registration), a page
elsewhere. The outage is logged once when it starts and once when it ends
(``accounts.outages``); the answers themselves are not logged one by one, since a busy
site would write a line (and Django a traceback) per request.

Django hands ``handler500`` no exception when the request was served asynchronously, so
it asks the database itself: a 500 that meets the database away is answered 503, any
other stays a 500.
"""

from __future__ import annotations

import contextlib

from django.db import DatabaseError, connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render

from accounts.oauth_urls import is_oauth_program_path
from accounts.outages import DATABASE, note_database_failure
from forge_web.mcp_path import is_mcp_path

__all__ = ["DETAIL", "database_unavailable", "server_error"]

DETAIL = "The database is unavailable for the moment; try again shortly."


def database_unavailable(request: HttpRequest) -> HttpResponse:
    """The 503 answer for ``request``: JSON for the API and MCP, a page elsewhere."""
    if _answers_json(request):
        response: HttpResponse = JsonResponse(
            {"detail": DETAIL, "code": "database_unavailable"}, status=503
        )
    else:
        response = render(request, "503.html", {"detail": DETAIL}, status=503)
    response["Retry-After"] = str(DATABASE.retry_after())
    # Logged once per outage (accounts.outages), not by Django once per request.
    response._has_been_logged = True  # type: ignore[attr-defined]
    return response


def server_error(request: HttpRequest) -> HttpResponse:
    """``handler500``: 503 when the database is away, else Django's plain 500."""
    if _database_away():
        return database_unavailable(request)
    if _answers_json(request):
        return JsonResponse({"detail": "Internal server error", "code": "server_error"}, status=500)
    return HttpResponse(
        "<h1>Server Error (500)</h1>", status=500, content_type="text/html; charset=utf-8"
    )


def _answers_json(request: HttpRequest) -> bool:
    """Whether ``request``'s caller is a program (the API, ``/mcp`` and the gateway,
    whose refusals the MCP endpoints pass on as tool errors, an MCP host's OAuth client)
    rather than a browser."""
    path = request.path
    return path.startswith("/api/") or is_mcp_path(path) or is_oauth_program_path(path)


def _database_away() -> bool:
    if DATABASE.down:
        # Known (a pool that timed out, a refused connection): asking again would wait
        # for the pool once more.
        return True
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except DatabaseError as error:
        return note_database_failure(error)
    finally:
        # Not inside a transaction (a test's): with a pool (CONN_MAX_AGE 0) every
        # connection is "obsolete" at once, and closing it would end that transaction.
        if not connection.in_atomic_block:
            with contextlib.suppress(DatabaseError):
                connection.close_if_unusable_or_obsolete()
    return False
