"""Refuse a request body over the limit before it is read: a pure ASGI middleware.

Django's ASGI handler reads a whole body (into memory, then a temporary file) before any
view, authentication or ``DATA_UPLOAD_MAX_MEMORY_SIZE`` check sees the request, so an
anonymous 200 MB POST was taken in whole before its 401. This sits in front of it:

- a ``Content-Length`` over the limit is answered at once, without reading any of the
  body (and without the "100 Continue" an ``Expect`` header asks for, which uvicorn sends
  only when the application first reads);
- a body without one (chunked) is counted as the server hands it over, and the moment it
  crosses the limit the application is told the client left (``http.disconnect``, on
  which Django stops reading and answers nothing) and the refusal is sent instead. The
  server reads from the socket only as the application asks (uvicorn pauses reading past
  a small buffer), so the rest of the body is never read; ``Connection: close`` ends it.

The answer is Forge's error shape: 413 ``{"detail", "code": "request_too_large"}``. The
limit is ``DATA_UPLOAD_MAX_MEMORY_SIZE`` (settings derive it from the plan size limit).
Websocket frames are bounded by the server (``forge_web.serve``), not here.
"""

from __future__ import annotations

import json

from asgiref.typing import (
    ASGI3Application,
    ASGIReceiveCallable,
    ASGIReceiveEvent,
    ASGISendCallable,
    ASGISendEvent,
    Scope,
)

__all__ = ["BodyLimit"]


class BodyLimit:
    def __init__(self, app: ASGI3Application, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(
        self, scope: Scope, receive: ASGIReceiveCallable, send: ASGISendCallable
    ) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = _content_length(scope)
        if declared is not None and declared > self.max_bytes:
            await self._refuse(send)
            return
        guard = _CountingGuard(receive, send, self.max_bytes)
        await self.app(scope, guard.receive, guard.send)
        if guard.crossed and not guard.started:
            await self._refuse(send)

    async def _refuse(self, send: ASGISendCallable) -> None:
        body = json.dumps(
            {
                "detail": f"Request body is over the limit of {self.max_bytes} bytes",
                "code": "request_too_large",
            }
        ).encode()
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
            (b"connection", b"close"),  # the unread rest of the body ends with the connection
        ]
        await send({"type": "http.response.start", "status": 413, "headers": headers})
        await send({"type": "http.response.body", "body": body})


class _CountingGuard:
    """The application's ``receive`` and ``send`` for one request, counting body bytes."""

    def __init__(
        self, receive: ASGIReceiveCallable, send: ASGISendCallable, max_bytes: int
    ) -> None:
        self._receive, self._send, self._max_bytes = receive, send, max_bytes
        self.received = 0
        self.crossed = False  # the body went over the limit
        self.started = False  # the application began its answer

    async def receive(self) -> ASGIReceiveEvent:
        if self.crossed:
            return {"type": "http.disconnect"}
        message = await self._receive()
        if message["type"] == "http.request":
            self.received += len(message.get("body", b""))
            if self.received > self._max_bytes:
                self.crossed = True
                return {"type": "http.disconnect"}
        return message

    async def send(self, message: ASGISendEvent) -> None:
        if self.crossed and not self.started:
            return  # whatever the application says to a body it never had whole is dropped
        if message["type"] == "http.response.start":
            self.started = True
        await self._send(message)


def _content_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", ()):
        if name.lower() == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None  # the server refuses a malformed length before we are called
    return None
