"""Tools served by an MCP server, over stdio or streamable HTTP, through the official
``mcp`` SDK.

``McpServer`` is one session: it starts the server (or connects to its URL) once and
keeps the session open across calls. The SDK is async and Runners are synchronous, so
the session lives on a private event loop in a daemon thread and calls cross over with
``run_coroutine_threadsafe``. ``forge.runners.mcp_connection`` keeps a session alive
for a deployment (restarting a dead one, caching discovery); a tool's runner calls
through it. The SDK's own response cache is off: when to list tools again is the
connection's decision. Messages that reach people (a failed start, a broken session)
have the server's environment and header values masked, then ``redact_text``. Each
remote tool becomes a ``ToolSpec`` named ``<server>.<tool>`` whose side effect, idempotence
and risk come from the tool's annotations, read the cautious way when they are
absent (the MCP defaults: may write to the open world, destructively, not
idempotent). Annotations are hints; they are trusted here because an operator chose
the server, and the policy still decides what a plan may call.
"""

from __future__ import annotations

import asyncio
import base64
import concurrent.futures
import functools
import hashlib
import re
import tempfile
import threading
from collections.abc import Callable, Coroutine, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol, TextIO, TypeVar, cast

import mcp.types as mcp_types
from mcp import Client, MCPError, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from pydantic import ValidationError

from forge.redaction import REDACTED, redact_text
from forge.runners.base import Artifact, RunContext, RunnerOutcome
from forge.runners.errors import McpUnavailable, RunnerError, RunnerTimeout
from forge.runners.mcp_config import SERVER_NAME, McpServerConfig
from forge.runners.preview import CallPreview, json_text
from forge.tools.spec import Risk, SideEffect, ToolSpec

__all__ = ["McpCaller", "McpServer", "McpToolRunner", "mcp_tool_spec"]

_NOT_IN_ID = re.compile(r"[^A-Za-z0-9_.-]")
_MAX_ID = 64
_T = TypeVar("_T")


def mcp_tool_spec(server: str, tool: mcp_types.Tool) -> ToolSpec:
    """The Forge view of one remote tool; ``args_schema`` is its ``inputSchema`` and
    ``output_schema`` its ``outputSchema``. A schema that names no ``$schema`` is JSON
    Schema 2020-12, MCP's default dialect (SEP-1613), and says so, so that the registry
    enforces its keywords (``forge.tools.registry``).

    Annotations map onto side-effect classes (SPEC section 5): ``readOnlyHint`` reads;
    otherwise ``destructiveHint`` (true unless the server says false) is ``delete``,
    else ``openWorldHint`` (true unless false) is ``external``, else ``write``. Delete and
    external always wait for a person's approval."""
    hints = tool.annotations or mcp_types.ToolAnnotations()
    side_effect: SideEffect
    risk: Risk
    if hints.read_only_hint:
        side_effect, idempotent, risk = "read", True, "low"
    else:
        if hints.destructive_hint is not False:
            side_effect = "delete"
        elif hints.open_world_hint is not False:
            side_effect = "external"
        else:
            side_effect = "write"
        idempotent = hints.idempotent_hint is True
        risk = "medium" if hints.destructive_hint is False else "high"
    return ToolSpec(
        name=_tool_id(server, tool.name),
        description=tool.description or tool.title or tool.name,
        args_schema=_with_dialect(tool.input_schema),
        permission_scope=f"mcp.{server}",
        side_effect=side_effect,
        idempotent=idempotent,
        risk=risk,
        default_timeout_s=30.0,
        source=f"mcp:{server}",
        # a server that declares an outputSchema answers with structuredContent in it,
        # which is the step's output (see run); without one the output is not known
        output_schema=tool.output_schema,
    )


# MCP's default dialect for the schemas its messages embed (SEP-1613).
MCP_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"


def _with_dialect(schema: dict[str, Any]) -> dict[str, Any]:
    return schema if "$schema" in schema else {"$schema": MCP_SCHEMA_DIALECT, **schema}


def _tool_id(server: str, name: str) -> str:
    tool_id = _NOT_IN_ID.sub("_", f"{server}.{name}")
    if len(tool_id) > _MAX_ID:
        # Keep ids distinct when two long names share their first 55 characters.
        digest = hashlib.sha256(name.encode()).hexdigest()[:8]
        tool_id = f"{tool_id[: _MAX_ID - 9]}-{digest}"
    return tool_id


class McpServer:
    """A running MCP server and its open session. Close it (or use ``with``).

    Over stdio when given a ``command`` (with ``env`` and ``cwd``), over streamable HTTP
    when given a ``url`` (with ``headers``). Raises ``McpUnavailable`` when the server
    does not start and answer the handshake within ``startup_timeout_s``.
    """

    def __init__(
        self,
        name: str,
        command: Sequence[str] = (),
        *,
        env: Mapping[str, str] | None = None,
        cwd: Path | str | None = None,
        url: str = "",
        headers: Mapping[str, str] | None = None,
        startup_timeout_s: float = 30.0,
        on_tools_changed: Callable[[], None] | None = None,
    ) -> None:
        if not SERVER_NAME.fullmatch(name):
            raise ValueError(f"MCP server name {name!r} must match {SERVER_NAME.pattern}")
        if bool(command) == bool(url):
            raise ValueError("an MCP server needs a command or a url")
        self.name = name
        self._on_tools_changed = on_tools_changed
        self._secrets = tuple(
            value for value in (*(env or {}).values(), *(headers or {}).values()) if len(value) >= 4
        )
        # The server's stderr is kept to explain a failed start, not shown to plans.
        self._stderr = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")
        self._final_stderr = ""
        self._client: Client | None = None
        self._stop: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None
        self._closed = False
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name=f"forge-mcp-{name}", daemon=True
        )
        self._thread.start()
        ready: concurrent.futures.Future[None] = concurrent.futures.Future()
        if url:
            session = self._http(url, dict(headers or {}), ready)
        else:
            params = StdioServerParameters(
                command=command[0], args=list(command[1:]), env=dict(env or {}), cwd=cwd
            )
            session = self._stdio(params, ready)
        self._serving = asyncio.run_coroutine_threadsafe(session, self._loop)
        try:
            ready.result(timeout=startup_timeout_s)
        except BaseException as exc:
            reason = "no handshake in time" if isinstance(exc, TimeoutError) else _leaf(exc)
            self.close()
            tail = "" if url else f"; stderr: {self.stderr_tail(500)}"
            raise McpUnavailable(
                self.mask(f"MCP server {name!r} did not start ({reason}){tail}")
            ) from exc

    @classmethod
    def start(
        cls,
        config: McpServerConfig,
        *,
        startup_timeout_s: float = 30.0,
        on_tools_changed: Callable[[], None] | None = None,
    ) -> McpServer:
        """The server ``config`` describes, started (or connected to)."""
        return cls(
            config.name,
            config.command,
            env=dict(config.env),
            cwd=config.cwd,
            url=config.url,
            headers=dict(config.headers),
            startup_timeout_s=startup_timeout_s,
            on_tools_changed=on_tools_changed,
        )

    def _new_client(self, transport: Any) -> Client:
        return Client(transport, cache=None, message_handler=self._notified)

    async def _notified(self, message: object) -> None:
        # A server that says its tool list changed gets listed again before next use.
        if isinstance(message, mcp_types.ToolListChangedNotification) and self._on_tools_changed:
            self._on_tools_changed()

    async def _stdio(
        self, params: StdioServerParameters, ready: concurrent.futures.Future[None]
    ) -> None:
        transport = stdio_client(params, errlog=cast(TextIO, self._stderr))
        await self._serve(self._new_client(transport), ready)

    async def _http(
        self, url: str, headers: dict[str, str], ready: concurrent.futures.Future[None]
    ) -> None:
        try:
            async with create_mcp_http_client(headers=headers) as http:
                transport = streamable_http_client(url, http_client=http)
                await self._serve(self._new_client(transport), ready)
        except Exception as exc:
            if not ready.done():
                ready.set_exception(exc)

    async def _serve(self, session: Client, ready: concurrent.futures.Future[None]) -> None:
        # The SDK's context managers must be entered and left by the same task, so one
        # task holds the session open until close() sets the stop event.
        self._task = asyncio.current_task()
        self._stop = asyncio.Event()
        try:
            async with session as client:
                self._client = client
                ready.set_result(None)
                await self._stop.wait()
        except Exception as exc:
            if not ready.done():
                ready.set_exception(exc)
        finally:
            self._client = None

    def list_tools(self, *, timeout_s: float = 30.0) -> list[mcp_types.Tool]:
        tools: list[mcp_types.Tool] = []
        cursor: str | None = None
        for _ in range(100):  # a server paging forever must not hang discovery
            page = self._call(
                functools.partial(Client.list_tools, cursor=cursor), timeout_s=timeout_s
            )
            tools += page.tools
            cursor = page.next_cursor
            if cursor is None:
                break
        return tools

    def call_tool(
        self, name: str, arguments: Mapping[str, Any], *, timeout_s: float
    ) -> mcp_types.CallToolResult:
        """Raises ``RunnerTimeout``, ``McpUnavailable``, or ``RunnerError`` (``mcp_error``)
        for an error the server answered at the protocol level."""
        return self._call(
            lambda c: c.call_tool(name, dict(arguments), read_timeout_seconds=timeout_s),
            timeout_s=timeout_s,
        )

    @property
    def closed(self) -> bool:
        return self._closed

    def _call(
        self, request: Callable[[Client], Coroutine[Any, Any, _T]], *, timeout_s: float
    ) -> _T:
        client = self._client
        if self._closed or client is None:
            raise McpUnavailable(f"MCP server {self.name!r} is not connected")
        future = asyncio.run_coroutine_threadsafe(request(client), self._loop)
        try:
            # A little slack, so the SDK's own read timeout answers first when it can.
            return future.result(timeout=timeout_s + 1.0)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise RunnerTimeout(
                f"MCP server {self.name!r} did not answer in {timeout_s:g}s"
            ) from None
        except MCPError as exc:
            message = self.mask(exc.message)
            if exc.code == mcp_types.REQUEST_TIMEOUT:
                raise RunnerTimeout(f"MCP server {self.name!r}: {message}") from None
            if exc.code == mcp_types.CONNECTION_CLOSED:
                raise McpUnavailable(f"MCP server {self.name!r} went away: {message}") from None
            raise RunnerError(f"MCP error {exc.code}: {message}", code="mcp_error") from None
        except (ValidationError, OSError, RuntimeError) as exc:
            raise McpUnavailable(self.mask(f"MCP server {self.name!r}: {exc}")) from None

    def mask(self, text: str) -> str:
        """``text`` without this server's environment and header values, then redacted."""
        for secret in self._secrets:
            text = text.replace(secret, REDACTED)
        return redact_text(text)

    def close(self) -> None:
        """End the session and the server process; safe to call twice."""
        if self._closed:
            return
        self._closed = True

        def stop() -> None:
            if self._client is None and self._task is not None:
                self._task.cancel()  # still starting: nothing to shut down politely
            elif self._stop is not None:
                self._stop.set()

        self._loop.call_soon_threadsafe(stop)
        # The SDK bounds its own shutdown (close stdin, wait, kill): a few seconds at most.
        concurrent.futures.wait([self._serving], timeout=15.0)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5.0)
        if not self._thread.is_alive():
            self._loop.close()
        self._final_stderr = self.stderr_tail()
        self._stderr.close()

    def __enter__(self) -> McpServer:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def stderr_tail(self, limit: int = 2000) -> str:
        """The end of what the server wrote to stderr, to explain a failure (masked)."""
        if self._stderr.closed:
            return self._final_stderr
        self._stderr.seek(0)
        return self.mask(self._stderr.read()[-limit:].strip()) or "(empty)"


def _leaf(exc: BaseException) -> str:
    # anyio wraps the real cause in (nested) exception groups.
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return f"{type(exc).__name__}: {exc}"


class McpCaller(Protocol):
    """What a tool's runner calls through: ``McpConnection`` (which keeps a session alive
    and makes sure the tool is still the one ``spec`` describes)."""

    @property
    def name(self) -> str: ...

    def call_tool(
        self, name: str, arguments: Mapping[str, Any], *, timeout_s: float, spec: ToolSpec
    ) -> mcp_types.CallToolResult: ...


class McpToolRunner:
    """Calls one remote tool; ``structuredContent`` becomes the output when present,
    else ``{"text": ...}`` of the text blocks. ``isError`` fails the step."""

    def __init__(
        self,
        server: McpCaller,
        remote_name: str,
        annotations: mcp_types.ToolAnnotations | None = None,
    ) -> None:
        self.server = server
        self.remote_name = remote_name
        self.annotations = annotations

    def preview(self, tool: ToolSpec, args: Mapping[str, Any], context: RunContext) -> CallPreview:
        """The server, the remote tool, its annotations as the server declared them and
        how Forge reads them, and the arguments."""
        hints = self.annotations
        declared = (
            "none"
            if hints is None
            else ", ".join(
                f"{name}={value}"
                for name, value in (
                    ("readOnlyHint", hints.read_only_hint),
                    ("destructiveHint", hints.destructive_hint),
                    ("idempotentHint", hints.idempotent_hint),
                    ("openWorldHint", hints.open_world_hint),
                )
                if value is not None
            )
            or "none"
        )
        text = "\n".join(
            (
                f"MCP server {self.server.name!r}, tool {self.remote_name!r}",
                f"annotations: {declared}",
                f"read as: side effect {tool.side_effect}, risk {tool.risk}, "
                f"{'idempotent' if tool.idempotent else 'not idempotent'}",
                "arguments:",
                json_text(args),
            )
        )
        return CallPreview("mcp", f"{tool.name} ({tool.side_effect})", text)

    def run(self, tool: ToolSpec, args: Mapping[str, Any], context: RunContext) -> RunnerOutcome:
        try:
            result = self.server.call_tool(
                self.remote_name, args, timeout_s=context.timeout_s, spec=tool
            )
        except RunnerError as error:
            return RunnerOutcome.failure(str(error), error.code)
        texts = [block.text for block in result.content if isinstance(block, mcp_types.TextContent)]
        text = "\n".join(texts)
        artifacts = _artifacts(result.content)
        if result.is_error:
            return RunnerOutcome.failure(
                text or f"{tool.name} reported an error", "tool_failed", artifacts=artifacts
            )
        output = (
            result.structured_content if result.structured_content is not None else {"text": text}
        )
        return RunnerOutcome.success(output, artifacts=artifacts)


def _artifacts(content: Sequence[Any]) -> tuple[Artifact, ...]:
    found = []
    for index, block in enumerate(content):
        if isinstance(block, mcp_types.ImageContent | mcp_types.AudioContent):
            found.append(
                Artifact(f"{block.type}-{index}", block.mime_type, base64.b64decode(block.data))
            )
        elif isinstance(block, mcp_types.EmbeddedResource):
            resource = block.resource
            if isinstance(resource, mcp_types.TextResourceContents):
                data, media_type = resource.text.encode(), resource.mime_type or "text/plain"
            else:
                data = base64.b64decode(resource.blob)
                media_type = resource.mime_type or "application/octet-stream"
            found.append(Artifact(f"resource-{index}", media_type, data))
    return tuple(found)
