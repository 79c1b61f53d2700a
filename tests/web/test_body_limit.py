"""The request body limit, driven as an ASGI server drives it: what the application is
handed, how much of the body is read before a refusal, and what the client is answered.
(tests/integration/test_body_limit.py checks the same against a real uvicorn.)"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from django.conf import settings

from forge_web.body_limit import BodyLimit

LIMIT = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
MIB = 2**20
REFUSAL = {
    "detail": f"Request body is over the limit of {LIMIT} bytes",
    "code": "request_too_large",
}


class Client:
    """The server's side: hands out body chunks on request, keeps what is sent back."""

    def __init__(self, chunks: list[bytes] | None = None, *, endless: bytes = b"") -> None:
        self.chunks, self.endless = list(chunks or []), endless
        self.reads = 0
        self.done = False  # the whole body was handed out
        self.sent: list[dict[str, Any]] = []

    async def receive(self) -> dict[str, Any]:
        self.reads += 1
        if self.endless:
            return {"type": "http.request", "body": self.endless, "more_body": True}
        if self.done:
            await asyncio.Event().wait()  # as a server does until the client goes away
        body = self.chunks.pop(0) if self.chunks else b""
        self.done = not self.chunks
        return {"type": "http.request", "body": body, "more_body": not self.done}

    async def send(self, message: dict[str, Any]) -> None:
        self.sent.append(message)

    def answer(self) -> tuple[int, dict[bytes, bytes], bytes]:
        start, *bodies = self.sent
        body = b"".join(message.get("body", b"") for message in bodies)
        return start["status"], dict(start["headers"]), body


class ReadingApp:
    """Reads the whole body as Django does (stopping at a disconnect), then answers 200."""

    def __init__(self) -> None:
        self.calls = 0
        self.body = b""
        self.disconnected = False

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        self.calls += 1
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                self.disconnected = True
                return
            self.body += message.get("body", b"")
            if not message.get("more_body"):
                break
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"read"})


def http_scope(*headers: tuple[bytes, bytes], path: str = "/api/v1/plans") -> dict[str, Any]:
    return {"type": "http", "method": "POST", "path": path, "headers": list(headers)}


def test_a_declared_length_over_the_limit_is_refused_without_reading_or_calling_the_app():
    app, client = ReadingApp(), Client(endless=b"x" * MIB)
    scope = http_scope((b"content-length", str(200 * MIB).encode()))

    asyncio.run(BodyLimit(app, LIMIT)(scope, client.receive, client.send))

    status, headers, body = client.answer()
    assert (status, json.loads(body)) == (413, REFUSAL)
    assert headers[b"content-type"] == b"application/json"
    assert headers[b"connection"] == b"close"
    assert (app.calls, client.reads) == (0, 0)


def test_a_chunked_body_is_refused_at_the_chunk_that_crosses_the_limit():
    app, client = ReadingApp(), Client(endless=b"x" * MIB)

    asyncio.run(BodyLimit(app, LIMIT)(http_scope(), client.receive, client.send))

    status, _, body = client.answer()
    assert (status, json.loads(body)) == (413, REFUSAL)
    assert client.reads == LIMIT // MIB + 1  # nothing read after the chunk that crossed
    assert app.disconnected and app.body == b"x" * (LIMIT // MIB) * MIB


def test_a_body_of_exactly_the_limit_reaches_the_app_whole():
    chunks = [b"a" * (LIMIT - MIB), b"b" * MIB]
    app, client = ReadingApp(), Client(chunks)
    scope = http_scope((b"content-length", str(LIMIT).encode()))

    asyncio.run(BodyLimit(app, LIMIT)(scope, client.receive, client.send))

    assert client.answer() == (200, {}, b"read")
    assert app.body == b"".join(chunks)


def test_websockets_pass_through_untouched():
    seen: list[dict[str, Any]] = []

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        seen.append(scope)

    scope = {"type": "websocket", "path": "/ws/runs/1/", "headers": []}
    asyncio.run(BodyLimit(app, 1)(scope, Client().receive, Client().send))

    assert seen == [scope]


def asgi_post(length: int) -> dict[str, Any]:
    return {
        **http_scope((b"content-type", b"application/json"), (b"content-length", b"%d" % length)),
        "scheme": "http",
        "server": ("testserver", 80),
        "client": ("203.0.113.7", 50000),
        "query_string": b"",
        "root_path": "",
        "http_version": "1.1",
        "asgi": {"version": "3.0"},
    }


@pytest.mark.django_db(transaction=True)
def test_an_anonymous_200_mb_post_to_the_api_is_refused_before_its_401():
    from forge_web.asgi import application

    huge, small = Client(endless=b"x" * MIB), Client([b"{}"])

    asyncio.run(application(asgi_post(200 * MIB), huge.receive, huge.send))
    asyncio.run(application(asgi_post(2), small.receive, small.send))

    status, _, body = huge.answer()
    assert (status, json.loads(body), huge.reads) == (413, REFUSAL, 0)
    assert small.answer()[0] == 401  # what the same request gets when it is small
