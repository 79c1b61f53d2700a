"""The ``/mcp`` endpoint, made on its first request, not before.

The MCP SDK (with its pydantic models of every protocol version) took about half of the
web process's start-up to import and about 28 MiB of its memory, and no page needs it.
So the site's ASGI application routes ``/mcp`` to a ``DeferredMcp``: when the lifespan
protocol starts, it says the server has started at once and waits; the first request to
``/mcp`` wakes it, it imports ``forge_web.mcp`` in a thread, builds the ``McpEndpoint``
and runs its session manager until shutdown. That first request waits for it (a second
or two, once per process); a process whose ``/mcp`` nobody calls never pays for it
(bench/startup.py, bench/worker_path.py).

If the endpoint cannot be built or its session manager cannot start, the error is
logged and ``/mcp`` answers 503 ``mcp_unavailable`` naming it; the pages go on working.
Without the lifespan protocol (a server that does not run it), ``/mcp`` answers 503 too.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import TYPE_CHECKING

from asgiref.typing import (
    ASGI3Application,
    ASGIReceiveCallable,
    ASGIReceiveEvent,
    ASGISendCallable,
    Scope,
)

from forge_web.mcp_path import MCP_PATH, is_mcp

if TYPE_CHECKING:
    from forge_web.mcp import McpEndpoint

__all__ = ["DeferredMcp"]

logger = logging.getLogger(__name__)


class DeferredMcp:
    """``/mcp`` in front of ``django_app``, built when the server's lifespan starts."""

    def __init__(self, django_app: ASGI3Application) -> None:
        self._django = django_app
        self._endpoint: McpEndpoint | None = None
        self._error: str | None = None
        self._started = False
        self._ready: asyncio.Event | None = None
        self._wanted: asyncio.Event | None = None

    def in_front_of(self, app: ASGI3Application) -> ASGI3Application:
        """An HTTP application that serves ``/mcp`` here and every other path by ``app``."""

        async def route(scope: Scope, receive: ASGIReceiveCallable, send: ASGISendCallable) -> None:
            await (self if is_mcp(scope) else app)(scope, receive, send)

        return route

    def lifespan_app(self) -> ASGI3Application:
        """The ASGI lifespan protocol's application: startup completes at once; the
        endpoint is built on the first ``/mcp`` request and its session manager runs
        from then until shutdown."""

        async def lifespan(
            scope: Scope, receive: ASGIReceiveCallable, send: ASGISendCallable
        ) -> None:
            await receive()  # lifespan.startup
            # Made here, in the server's event loop, for this lifespan: a session
            # manager runs once, so each lifespan builds its own endpoint.
            self._wanted, self._ready = asyncio.Event(), asyncio.Event()
            self._endpoint, self._error = None, None
            self._started = True
            await send({"type": "lifespan.startup.complete"})
            shutdown = asyncio.ensure_future(receive())
            wanted = asyncio.ensure_future(self._wanted.wait())
            await asyncio.wait({shutdown, wanted}, return_when=asyncio.FIRST_COMPLETED)
            wanted.cancel()
            if not shutdown.done():
                await self._serve_until(shutdown)
            await shutdown  # lifespan.shutdown
            await send({"type": "lifespan.shutdown.complete"})

        return lifespan

    async def _serve_until(self, shutdown: asyncio.Future[ASGIReceiveEvent]) -> None:
        assert self._ready is not None
        try:
            endpoint = await asyncio.to_thread(self._build)
            async with endpoint.lifespan():
                self._endpoint = endpoint
                self._ready.set()
                await shutdown
                self._endpoint = None
        except Exception as exc:
            logger.exception("the MCP endpoint at %s could not start", MCP_PATH)
            self._error = f"{type(exc).__name__}: {exc}"
            self._ready.set()

    def _build(self) -> McpEndpoint:
        # Imported here, in a thread, on the first /mcp request: the SDK's import is what
        # this module exists to defer (there is no import circle: mcp_path holds the path).
        from forge_web.mcp import McpEndpoint

        return McpEndpoint(self._django)

    async def __call__(
        self, scope: Scope, receive: ASGIReceiveCallable, send: ASGISendCallable
    ) -> None:
        if self._started and self._ready is not None and self._wanted is not None:
            self._wanted.set()
            await self._ready.wait()
        if self._endpoint is None:
            detail = (
                f"The MCP endpoint could not start ({self._error})"
                if self._error
                else "The MCP endpoint runs only under a server with the ASGI lifespan on"
            )
            await _unavailable(send, detail)
            return
        await self._endpoint(scope, receive, send)


async def _unavailable(send: ASGISendCallable, detail: str) -> None:
    body = json.dumps({"detail": detail, "code": "mcp_unavailable"}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": 503, "headers": headers})
    await send({"type": "http.response.body", "body": body})
