"""The gateway's MCP server: the upstream MCP servers' tools, every call through Forge.

It lists the tools ``GET /api/v1/gateway/tools`` answers (named ``<server>.<tool>``, with
their annotations, input and output schemas) and sends each call to ``POST
/api/v1/gateway/calls``, with the run and step its ``_meta`` names (``forge/run``,
``forge/step``). It holds no tool of its own and decides nothing: the web checks the call,
forwards it once and answers, so an agent's calls pass the same gate and audit trail over
``/mcp/gateway`` and over ``forge gateway --url URL`` (stdio). ``client_for`` gives the
``GatewayApi`` for the request at hand: for ``forge gateway`` the REST client
(``forge.client.AsyncForgeClient``); in the web process ``/mcp/gateway`` calls the same
functions the REST API runs (``gateway.calls``) without an HTTP request back into itself
(``forge_web.mcp_gateway``), refusing with the same ``ForgeApiError`` the REST answer
would have given.

Answers: a tool's output as its structured content when it declares an output schema
(and as JSON text), else its text; a refusal or a failed call is a tool error shaped
``{"error": {"status", "code", "detail"}, "next"}``. A bound call's answer says in its
``_meta`` what became of the step and the run (``forge/step_status``,
``forge/run_status``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol

import anyio
import mcp_types as types
from mcp import MCPError
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server

from forge.client import ForgeApiError
from forge.gateway.binding import BoundCall, GatewayRefused
from forge.version import forge_version

__all__ = [
    "GATEWAY_INSTRUCTIONS",
    "ClientFor",
    "GatewayApi",
    "answered",
    "build_gateway",
    "refusal",
]


class GatewayApi(Protocol):
    """What the gateway asks of Forge, answered as the REST API answers (its JSON) and
    refused with ``ForgeApiError`` carrying the API's status, code and body."""

    async def gateway_tools(self) -> list[dict[str, Any]]: ...

    async def gateway_call(
        self,
        tool: str,
        arguments: Mapping[str, Any],
        *,
        run: int | None = None,
        step: str | None = None,
    ) -> dict[str, Any]: ...

    async def gateway_call_status(self, call_id: int) -> str: ...


ClientFor = Callable[[ServerRequestContext[Any]], AbstractAsyncContextManager[GatewayApi]]

GATEWAY_INSTRUCTIONS = """\
Forge's gateway: the tools of the MCP servers Forge was configured with, each call checked \
by Forge. To execute a step of a run started with executor "agent", call the step's tool \
with exactly the step's arguments and name the run and step in the call's _meta \
({"forge/run": RUN_ID, "forge/step": STEP_ID}); Forge refuses a step that is not ready, \
another tool or other arguments (error.code says why) and forwards an accepted call once. \
Every refusal is an error {"error": {"status", "code", "detail"}, "next"}."""

_NEXT = {
    "not_in_plan": "Call the tool the run's step names, with the step's id in _meta forge/step.",
    "args_mismatch": "Send exactly the step's approved arguments (get_run shows the step); "
    "values taken from earlier steps are filled in by Forge.",
    "step_not_ready": "Wait until the step's dependencies succeeded (get_run), then call again.",
    "step_done": "This step has its answer already: read it with get_run.",
    "run_not_agent": 'Only runs started with executor "agent" take the agent\'s calls.',
    "not_approved": "The run's version is not approved for what would run; a person must "
    "approve it again.",
    "unknown_tool": "List the tools again: this one is not offered.",
    "tool_unavailable": "Its MCP server does not answer now; try again later.",
    "unauthorized_tool": "The policy does not allow this tool to you; ask a Forge admin.",
    "invalid_meta": 'Name both the run and the step in _meta: {"forge/run": ID, '
    '"forge/step": "step"}.',
    "invalid_args": "Fix the arguments to match the tool's input schema.",
    "tool_failed": "The upstream tool reported an error: see detail.",
    "approval_pending": "A person must approve this call: call it again, with the same "
    "arguments, to wait on; once approved it runs once and repeats get its answer.",
    "rejected": "A person rejected this call: see detail for their comment; do not repeat it.",
    "expired": "Nobody decided in time: call again to ask again.",
    "call_in_flight": "This call was sent and its answer was lost; it is never sent again.",
    "permission_denied": "Your API token's user lacks the role this needs; ask a Forge admin.",
    "not_found": "No such run: check forge/run.",
}
# JSON-RPC's code (in the range servers define) for a list request the API refused.
_REFUSED = -32003
# The status of a tool error that no HTTP answer carried.
_STATUS_BY_CODE = {"invalid_meta": 400, "tool_failed": 502, "unreachable": 503, "timeout": 504}


async def _decided(
    ctx: ServerRequestContext[Any], client: GatewayApi, held: int, hold_seconds: object
) -> bool:
    """Wait up to ``hold_seconds`` (the site's ``FORGE_GATEWAY_HOLD_SECONDS``) for a person
    to decide held call ``held``, reporting progress; whether they did."""
    bound = float(hold_seconds) if isinstance(hold_seconds, int | float) else 0.0
    start = anyio.current_time()
    pause = 0.2
    while True:
        if await client.gateway_call_status(held) != "held":
            return True
        waited = anyio.current_time() - start
        if waited >= bound:
            return False
        await ctx.session.report_progress(waited, bound, f"held call {held} waits for a person")
        await anyio.sleep(min(pause, bound - waited))
        pause = min(pause * 2, 2.0)


def refusal(
    code: str, detail: str, status: int = 0, *, held_call: object = None
) -> types.CallToolResult:
    """A tool error in the one shape of Forge's MCP errors (with the held call's id when
    the call is held)."""
    error: dict[str, Any] = {"status": status or _STATUS_BY_CODE.get(code, 409), "code": code}
    error["detail"] = detail
    if held_call is not None:
        error["held_call"] = held_call
    data: dict[str, Any] = {"error": error}
    if code in _NEXT:
        data["next"] = _NEXT[code]
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=json.dumps(data, ensure_ascii=False))],
        structured_content=data,
        is_error=True,
    )


def _tool(data: Mapping[str, Any]) -> types.Tool:
    annotations = data.get("annotations") or None
    return types.Tool(
        name=str(data["name"]),
        description=str(data.get("description") or ""),
        input_schema=dict(data["input_schema"]),
        output_schema=None if data.get("output_schema") is None else dict(data["output_schema"]),
        annotations=None
        if annotations is None
        else types.ToolAnnotations.model_validate(annotations),
    )


def answered(data: Mapping[str, Any]) -> types.CallToolResult:
    """The gateway's answer to one forwarded call (``POST /gateway/calls``'s JSON)."""
    meta: dict[str, Any] = {}
    if data.get("run") is not None:
        meta = {
            "forge/step_status": data.get("step_status"),
            "forge/run_status": data.get("run_status"),
        }
    if data.get("is_error"):
        result = refusal(str(data.get("error_code") or "tool_failed"), str(data.get("error") or ""))
        return result.model_copy(update={"meta": meta or None})
    output = data.get("output")
    if data.get("structured"):
        text = json.dumps(output, ensure_ascii=False)
        structured = output if isinstance(output, dict) else None
    else:
        if isinstance(output, dict) and set(output) == {"text"}:
            text = str(output["text"])  # a tool without an output schema answered text
        else:
            text = json.dumps(output, ensure_ascii=False)
        structured = None
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)],
        structured_content=structured,
        is_error=False,
        _meta=meta or None,
    )


def build_gateway(client_for: ClientFor, *, name: str = "forge-gateway") -> Server[Any]:
    """The gateway's MCP server; each request gets its ``GatewayApi`` from ``client_for``."""

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        try:
            async with client_for(ctx) as client:
                found = await client.gateway_tools()
        except ForgeApiError as error:
            # A request, not a tool call, so a JSON-RPC error, carrying the API's refusal.
            raise MCPError(_REFUSED, error.message, error.to_data()) from None
        return types.ListToolsResult(tools=[_tool(item) for item in found])

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        try:
            bound = BoundCall.from_meta(params.meta)
        except GatewayRefused as refused:
            return refusal(refused.code, refused.message)
        arguments = params.arguments or {}
        try:
            async with client_for(ctx) as client:
                try:
                    data = await client.gateway_call(
                        params.name,
                        arguments,
                        run=None if bound is None else bound.run_id,
                        step=None if bound is None else bound.step_id,
                    )
                except ForgeApiError as error:
                    held = error.body.get("held_call")
                    if error.code != "approval_pending" or not isinstance(held, int):
                        raise
                    if not await _decided(ctx, client, held, error.body.get("hold_seconds")):
                        raise
                    # Decided in time: asked again, the call is forwarded once (approved)
                    # or says why not (rejected, expired).
                    data = await client.gateway_call(params.name, arguments)
        except ForgeApiError as error:
            return refusal(
                error.code, error.message, error.status, held_call=error.body.get("held_call")
            )
        return answered(data)

    return Server(
        name,
        version=forge_version(),
        instructions=GATEWAY_INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )
