"""``/mcp/gateway``'s way to Forge in the web process: the gateway's functions called
directly, not through an HTTP request back into this process.

``forge.gateway.server`` asks a ``GatewayApi`` for the tools, a call and a held call's
status. ``forge gateway --url`` (stdio, another process) asks the REST API; here
``InProcessGateway`` runs the functions the REST API runs (``gateway.calls``) in a thread
of its own, as Django runs a request (``asgiref``'s ``ThreadSensitiveContext`` and
``sync_to_async``), as the user of the request's bearer token. Nothing that decides
anything is skipped: ``forge_web.mcp`` has already checked the token, the host and the
caller's rate with ``GET /api/v1/me`` for this HTTP request; the token is read again here
(``accounts.auth.bearer_user``: revoked since, refused); the call's fields are checked by
the REST body's own schema (``CallIn``) and its answer shaped by ``CallOut``;
permissions, the gate, the audit trail and the executor are the same code. A refusal is
the ``ForgeApiError`` the REST client would have raised from the API's answer (status,
code, detail and extras such as ``held_call``, by ``forge_web.api.forge_error_answer``).
The database connection is opened and closed around the call as Django does around a
request (``close_old_connections``). What it saves per call: the inner request's HTTP
encoding, Django's request cycle and middleware, ninja's parsing (docs/benchmarks.md,
"The gateway's cost per call").
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from asgiref.sync import ThreadSensitiveContext, sync_to_async
from django.core.exceptions import PermissionDenied
from django.db import DatabaseError, close_old_connections
from django.http import Http404
from ninja.errors import AuthenticationError
from pydantic import ValidationError

from accounts.auth import bearer_user
from accounts.outages import note_database_failure
from forge.client import ForgeApiError
from forge.errors import ForgeError
from forge_web.api import forge_error_answer
from forge_web.outages import DETAIL as DATABASE_AWAY
from gateway import calls
from gateway.schemas import CallIn, CallOut, GatewayToolOut

__all__ = ["InProcessGateway"]

logger = logging.getLogger(__name__)


class InProcessGateway:
    """The ``GatewayApi`` of one ``/mcp/gateway`` request, acting as ``token``'s user."""

    def __init__(self, token: str) -> None:
        self._token = token

    async def gateway_tools(self) -> list[dict[str, Any]]:
        return await self._run(_tools)

    async def gateway_call(
        self,
        tool: str,
        arguments: Mapping[str, Any],
        *,
        run: int | None = None,
        step: str | None = None,
    ) -> dict[str, Any]:
        return await self._run(_call, tool, dict(arguments), run, step)

    async def gateway_call_status(self, call_id: int) -> str:
        return await self._run(calls.call_status, call_id)

    async def _run[T](self, action: Callable[..., T], *args: Any) -> T:
        # A thread of its own, as Django gives each request (its ASGI handler does the
        # same): calls run side by side, however many wait on a slow upstream tool.
        async with ThreadSensitiveContext():
            return await sync_to_async(_as_user)(self._token, action, *args)


def _as_user[T](token: str, action: Callable[..., T], *args: Any) -> T:
    close_old_connections()  # as at a request's start: a broken or old connection goes
    try:
        user = bearer_user(token)
        if user is None:
            raise ForgeApiError(
                "Invalid or revoked API token", code="not_authenticated", status=401
            )
        return action(user, *args)
    except ForgeApiError:
        raise
    except Exception as exc:
        raise _refusal(exc) from None
    finally:
        close_old_connections()  # and at its end


def _tools(user: Any) -> list[dict[str, Any]]:
    return [GatewayToolOut.model_validate(t).model_dump() for t in calls.offered_tools(user)]


def _call(
    user: Any, tool: str, arguments: dict[str, Any], run: int | None, step: str | None
) -> dict[str, Any]:
    body = CallIn(tool=tool, arguments=arguments, run=run, step=step)
    answer = calls.call(user, body.tool, body.arguments, run=body.run, step=body.step)
    return CallOut.model_validate(answer).model_dump(mode="json")


def _refusal(exc: Exception) -> ForgeApiError:
    """What the API would have answered ``exc`` with (``forge_web.api``'s handlers)."""
    status: int
    body: dict[str, Any]
    if isinstance(exc, ForgeError):
        status, body = forge_error_answer(exc)
    elif isinstance(exc, ValidationError):
        errors = exc.errors(include_url=False, include_context=False)
        status, body = 422, {"detail": "Invalid request", "code": "validation_error",
                             "errors": errors}  # fmt: skip
    elif isinstance(exc, AuthenticationError):
        message = exc.message if exc.message != "Unauthorized" else "Authentication required"
        status, body = 401, {"detail": message, "code": "not_authenticated"}
    elif isinstance(exc, PermissionDenied):
        status, body = 403, {"detail": str(exc) or "Permission denied", "code": "permission_denied"}
    elif isinstance(exc, Http404):
        status, body = 404, {"detail": "Not found", "code": "not_found"}
    elif isinstance(exc, DatabaseError) and note_database_failure(exc):
        status, body = 503, {"detail": DATABASE_AWAY, "code": "database_unavailable"}
    else:
        logger.error("unexpected error in a /mcp/gateway call", exc_info=exc)
        status, body = 500, {"detail": "Internal server error", "code": "server_error"}
    return ForgeApiError(str(body["detail"]), code=str(body["code"]), status=status, body=body)
