"""``/mcp/gateway``'s way to Forge in the web process: the gateway's functions called
directly, not through an HTTP request back into this process.

``forge.gateway.server`` asks a ``GatewayApi`` for the tools, a call and a held call's
status. ``forge gateway --url`` (stdio, another process) asks the REST API; here
``InProcessGateway`` runs the functions the REST API runs (``gateway.calls``) on the
HTTP request's own thread, as Django runs a request (``forge_web.mcp`` enters an
``asgiref`` ``ThreadSensitiveContext`` for the whole request, which the SDK's tasks
inherit), as the user the request's bearer token was admitted as, on the database
connection the admission opened, which the request closes at its end, after the answer
is sent (``close_old_connections``, as Django does); a refused call closes it at once,
and so does each read of a held call's status, so that a wait for a person keeps none.
Nothing that decides anything is skipped: ``forge_web.mcp`` has already checked this
HTTP request as the API checks one with its token (``forge_web.mcp_admission``: HTTPS,
the host, the token, the rates), and its user acts to the request's end, as an API
request's does; the call's fields are checked by the REST body's own schema (``CallIn``)
and its answer shaped by ``CallOut``; permissions, the gate, the audit trail and the
executor are the same code. A refusal is the ``ForgeApiError`` the REST client would
have raised from the API's answer (status, code, detail and extras such as
``held_call``), made by the API's own exception handlers. What it saves per call: the
inner request's HTTP encoding, Django's request cycle and middleware, ninja's parsing
(docs/benchmarks.md, "The gateway's cost per call").
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

import pydantic
from asgiref.sync import SyncToAsync, sync_to_async
from django.db import close_old_connections
from django.http import HttpRequest
from ninja.errors import ValidationError

from accounts.models import User
from forge.client import ForgeApiError
from forge_web.api import api
from forge_web.mcp_path import GATEWAY_PATH
from gateway import calls
from gateway.schemas import CallIn, CallOut, GatewayToolOut

__all__ = ["InProcessGateway"]


class InProcessGateway:
    """The ``GatewayApi`` of one ``/mcp/gateway`` request, acting as the user it was
    admitted as."""

    def __init__(self, user: User) -> None:
        self._user = user

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
        return await self._run(_status, call_id)

    async def _run[T](self, action: Callable[..., T], *args: Any) -> T:
        # On the HTTP request's thread: forge_web.mcp enters its context for the whole
        # request (the SDK's tasks inherit it), so the call uses the connection the
        # admission opened, which the request closes at its end, after the answer is
        # sent. Outside any such context, thread-sensitive calls would all queue on the
        # process's one shared thread, however many wait on a slow upstream tool.
        if SyncToAsync.thread_sensitive_context.get(None) is None:
            raise RuntimeError("a gateway call outside an HTTP request's thread context")
        return await sync_to_async(_as_user)(self._user, action, *args)


def _as_user[T](user: User, action: Callable[..., T], *args: Any) -> T:
    try:
        return action(user, *args)
    except Exception as exc:
        refused = exc if isinstance(exc, ForgeApiError) else _refusal(exc)
        # A held call's wait for a person may follow (FORGE_GATEWAY_HOLD_SECONDS, a
        # minute by default): the request keeps no connection while it waits.
        close_old_connections()
        raise refused from None


def _status(user: Any, call_id: int) -> str:
    try:
        return calls.call_status(user, call_id)
    finally:
        close_old_connections()  # asked between the pauses of that wait


def _tools(user: Any) -> list[dict[str, Any]]:
    return [GatewayToolOut.model_validate(t).model_dump() for t in calls.offered_tools(user)]


def _call(
    user: Any, tool: str, arguments: dict[str, Any], run: int | None, step: str | None
) -> dict[str, Any]:
    body = CallIn(tool=tool, arguments=arguments, run=run, step=step)
    answer = calls.call(user, body.tool, body.arguments, run=body.run, step=body.step)
    return CallOut.model_validate(answer).model_dump(mode="json")


def _refusal(exc: Exception) -> ForgeApiError:
    """What the API would have answered ``exc`` with: its own exception handlers
    (``forge_web.api``) make the answer, so the two ways in cannot drift apart."""
    if isinstance(exc, pydantic.ValidationError):  # CallIn's, as ninja reports a body's
        exc = ValidationError(exc.errors(include_url=False, include_context=False))
    request = HttpRequest()
    request.method, request.path = "POST", GATEWAY_PATH
    answer = api.on_exception(request, exc)
    body = json.loads(answer.content)
    return ForgeApiError(
        str(body["detail"]), code=str(body["code"]), status=answer.status_code, body=body
    )
