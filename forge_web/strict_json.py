"""Every JSON body the web process reads is read as the CLI reads a plan file.

``json_io.parse_json`` under the deployment's import limits: a repeated key is refused
(``duplicate_key``) rather than the last value winning, ``NaN`` and ``Infinity`` are
``invalid_json``, and nesting past the depth limit is ``document_too_deep`` however deep
it is, never a ``RecursionError``. The REST API reads its bodies with ``StrictJsonParser``
(ninja's parser); ``/mcp`` puts ``StrictJsonBodies`` in front of the MCP SDK, whose own
parser lets a repeated key through and answers absurd nesting with a bare parse error.
"""

from __future__ import annotations

import json
from typing import Any, cast

from asgiref.typing import (
    ASGI3Application,
    ASGIReceiveCallable,
    ASGIReceiveEvent,
    ASGISendCallable,
    Scope,
)
from django.http import HttpRequest
from ninja.parser import Parser
from ninja.types import DictStrAny

from forge.errors import PlanDocumentError
from forge.plan.formats.json_io import parse_json
from plans.documents import import_limits

__all__ = ["StrictJsonBodies", "StrictJsonParser", "parse_body"]

# JSON-RPC's code for a message that cannot be read.
_PARSE_ERROR = -32700


def parse_body(body: bytes) -> object:
    """The data of a JSON request body; raises ``PlanDocumentError`` with its code. A body
    past the node limit whose ``"document"`` has more steps than allowed is refused for
    those (``too_many_steps``), as the document itself would be."""
    return parse_json(body, import_limits(), document_at="document")


class StrictJsonParser(Parser):
    """Ninja wraps what a parser raises in a 400 ``HttpError``; ``forge_web.api`` answers
    the ``PlanDocumentError`` behind it with its own code."""

    def parse_body(self, request: HttpRequest) -> DictStrAny:
        return cast(DictStrAny, parse_body(request.body))


class StrictJsonBodies:
    """ASGI middleware: a POST's body (bounded already by ``forge_web.body_limit``) is read
    whole and checked before ``app`` sees it; a body that is refused is answered 400 with a
    JSON-RPC parse error whose ``data`` carries Forge's ``code`` and ``detail``."""

    def __init__(self, app: ASGI3Application) -> None:
        self.app = app

    async def __call__(
        self, scope: Scope, receive: ASGIReceiveCallable, send: ASGISendCallable
    ) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        chunks: list[bytes] = []
        while True:
            message = await receive()
            if message["type"] != "http.request":  # the client went away
                return
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        try:
            parse_body(body)
        except PlanDocumentError as error:
            await _refuse(send, error)
            return
        replayed = False

        async def replay() -> ASGIReceiveEvent:
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, send)


async def _refuse(send: ASGISendCallable, error: PlanDocumentError) -> None:
    answer: dict[str, Any] = {
        "jsonrpc": "2.0",
        "id": None,
        "error": {
            "code": _PARSE_ERROR,
            "message": f"Parse error: {error.message}",
            "data": {"code": error.code, "detail": error.message},
        },
    }
    body = json.dumps(answer).encode()
    await send({
        "type": "http.response.start",
        "status": 400,
        "headers": [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
        ],
        "trailers": False,
    })  # fmt: skip
    await send({"type": "http.response.body", "body": body, "more_body": False})
