"""The one definition of Forge's MCP tools, served over stdio (``forge mcp``) and over
streamable HTTP (the web process, ``/mcp``).

Each tool is one or a few calls of ``forge.client.AsyncForgeClient``, so an agent does
exactly what the REST API lets its token's user do, checked, refused and audited there:
its plans are its own to author and never its own to approve. ``client_for`` says where
the calls go for the request at hand: over the network with the token of the
environment (stdio), or into the web process's own application with the token the HTTP
request carried.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from typing import Annotated, Any, Literal

import anyio
from jsonschema import Draft202012Validator
from mcp.server.context import ServerRequestContext
from mcp.server.mcpserver import Context, MCPServer
from mcp.types import CallToolRequestParams, CallToolResult, ToolAnnotations
from pydantic import BaseModel, Field

from forge.client import AsyncForgeClient, ForgeApiError, Polled, Version
from forge.mcp_server import views
from forge.mcp_server.outputs import CompiledOut, EventsOut, RunOut, VersionOut, WaitedOut
from forge.version import forge_version

__all__ = ["MAX_WAIT_S", "TOOL_NAMES", "ClientFor", "build_server"]

ClientFor = Callable[[Context[Any, Any]], AbstractAsyncContextManager[AsyncForgeClient]]

MAX_WAIT_S = 600.0  # one call of wait_for_approval; an agent that needs longer calls again
DEFAULT_WAIT_S = 60.0
TOOL_NAMES = (
    "compile_plan",
    "submit_plan",
    "plan_status",
    "wait_for_approval",
    "start_run",
    "get_run",
    "run_events",
)

INSTRUCTIONS = """\
Forge runs plans (a graph of tool calls) only after a person other than their author \
approved exactly that version. You act as the Forge user of your API token: the plans you \
submit are yours, so you can never approve them, and nothing of them runs until someone \
else does. The usual flow: compile_plan until it compiles (ok: true); submit_plan; \
wait_for_approval, again while it answers timed_out: true; once approved, start_run; then \
get_run and run_events (after the last seq you read) until the run is finished. Every \
answer is JSON with a "next" hint; a refused call is an error whose error.code says why \
(not_approved, permission_denied, has_errors, ...)."""

# --- Arguments ------------------------------------------------------------------------------

Document = Annotated[
    dict[str, Any] | None,
    Field(
        description='The plan as a forge.plan/v1 JSON object: {"goal": str, "steps": [{"id", '
        '"description", "tool", "args", "depends_on": [ids], "done_when": {"required_keys", '
        '"checks"}}], optional "deliverable", "budget", "requires_approval_before"}. Give '
        "either document or source."
    ),
]
Source = Annotated[
    str | None,
    Field(description="The plan as JSON, YAML or Mermaid text. Give either document or source."),
]
Format = Annotated[
    Literal["json", "yaml", "mermaid"] | None,
    Field(description="The format of source; guessed from the text when absent."),
]
PlanId = Annotated[int, Field(ge=1, description="The plan's id (plan_id in answers).")]
VersionNumber = Annotated[
    int, Field(ge=1, description="The plan version's number (version in answers).")
]
RunId = Annotated[int, Field(ge=1, description="The run's id (run_id in start_run's answer).")]

_READS = ToolAnnotations(read_only_hint=True, open_world_hint=False)


def build_server(client_for: ClientFor, *, name: str = "forge") -> MCPServer[Any]:
    """An MCP server with Forge's tools; each call gets its client from ``client_for``."""
    server: MCPServer[Any] = MCPServer(name, instructions=INSTRUCTIONS, version=forge_version())

    async def call[T](
        ctx: Context[Any, Any],
        action: Callable[[AsyncForgeClient], Awaitable[T]],
        view: Callable[[T], dict[str, Any]],
    ) -> CallToolResult:
        try:
            async with client_for(ctx) as client:
                value = await action(client)
        except ForgeApiError as error:
            return views.refusal(error)
        return views.answer(view(value))

    @server.tool(title="Compile a plan", annotations=_READS)
    async def compile_plan(
        ctx: Context[Any, Any],
        document: Document = None,
        source: Source = None,
        format: Format = None,
    ) -> Annotated[CallToolResult, CompiledOut]:
        """Compile a plan document with this Forge's tools and policy, without saving it.
        Answers ok, every diagnostic (code, severity, message, the steps concerned) and,
        when it compiles, the graph: each step's tool, side effect and why it will wait for
        a person's approval (approval_reasons)."""
        return await call(
            ctx, lambda c: c.compile(document, source=source, format=format), views.compiled
        )

    @server.tool(
        title="Submit a plan for review",
        annotations=ToolAnnotations(
            read_only_hint=False, destructive_hint=False, idempotent_hint=False,
            open_world_hint=False,
        ),
    )  # fmt: skip
    async def submit_plan(
        ctx: Context[Any, Any],
        name: Annotated[
            str | None,
            Field(description="The name of a new plan (1 to 200 characters); or give plan_id."),
        ] = None,
        plan_id: Annotated[
            int | None,
            Field(ge=1, description="Propose a new version of this existing plan instead."),
        ] = None,
        document: Document = None,
        source: Source = None,
        format: Format = None,
        note: Annotated[str, Field(description="What this version is for or changes.")] = "",
    ) -> Annotated[CallToolResult, VersionOut]:
        """Save a plan as a new plan (name) or as the next version of one (plan_id), with
        you as its author, and submit it for review. Nothing runs: a person other than you
        must approve it first. Answers the version: plan_id, version, status
        (awaiting_approval, or has_errors when it does not compile: it is saved but can
        never be approved) and its diagnostics."""
        if (name is None) == (plan_id is None):
            return views.refusal(
                ForgeApiError(
                    "give name (a new plan) or plan_id (a new version of it), not both",
                    code="invalid_arguments",
                )
            )
        if plan_id is not None:
            plan = plan_id
            return await call(
                ctx,
                lambda c: c.create_version(plan, document, source=source, format=format, note=note),
                views.version,
            )
        title = str(name)
        return await call(
            ctx,
            lambda c: c.create_plan(title, document, source=source, format=format, note=note),
            views.version,
        )

    @server.tool(title="Read a plan version's status", annotations=_READS)
    async def plan_status(
        ctx: Context[Any, Any],
        plan_id: PlanId,
        version: Annotated[
            int | None, Field(ge=1, description="The version's number; the latest if absent.")
        ] = None,
    ) -> Annotated[CallToolResult, VersionOut]:
        """A plan version's review status (draft, has_errors, awaiting_approval, approved,
        rejected, changes_requested, or superseded: then superseded_by names the newer
        version), its diagnostics, and the latest decision: who made it and their
        comment."""
        return await call(ctx, lambda c: c.get_version(plan_id, version), views.version)

    @server.tool(title="Wait for a person's decision", annotations=_READS)
    async def wait_for_approval(
        ctx: Context[Any, Any],
        plan_id: PlanId,
        version: VersionNumber,
        timeout_s: Annotated[
            float,
            Field(
                ge=0,
                le=MAX_WAIT_S,
                description=f"How long to wait, in seconds (at most {MAX_WAIT_S:g}).",
            ),
        ] = DEFAULT_WAIT_S,
    ) -> Annotated[CallToolResult, WaitedOut]:
        """Wait until a person approves or rejects the version, or timeout_s passes. Answers
        the version with timed_out: true if it still awaits approval (call again to wait
        longer), else its status: approved (then call start_run) or rejected (with the
        reviewer's comment). Returns at once for a version nobody can approve (has_errors,
        draft). Progress is reported while waiting."""

        async def progress(polled: Polled) -> None:
            await ctx.report_progress(
                polled.waited_s, polled.timeout_s, "still awaiting a person's approval"
            )

        async def wait(client: AsyncForgeClient) -> tuple[Version, float]:
            start = anyio.current_time()
            found = await client.wait_for_decision(
                plan_id, version, timeout_s=timeout_s, on_poll=progress
            )
            return found, anyio.current_time() - start

        return await call(ctx, wait, lambda pair: views.waited(*pair))

    @server.tool(
        title="Start a run of an approved version",
        annotations=ToolAnnotations(
            read_only_hint=False, destructive_hint=True, idempotent_hint=False,
            open_world_hint=True,
        ),
    )  # fmt: skip
    async def start_run(
        ctx: Context[Any, Any],
        plan_id: PlanId,
        version: VersionNumber,
        executor: Annotated[
            Literal["worker", "agent"],
            Field(
                description='"worker" (default): Forge\'s workers run every step. "agent": '
                "you execute the steps that call MCP tools yourself, through Forge's "
                'gateway, naming the run and step in each call\'s _meta ("forge/run", '
                '"forge/step"); Forge\'s workers run the rest.'
            ),
        ] = "worker",
    ) -> Annotated[CallToolResult, RunOut]:
        """Start running a version a person other than its author approved: its steps then
        do what they say, side effects included. Refused (error.code not_approved,
        has_errors, self_approval, content_changed, ...; status 409) for any other version,
        and then nothing runs. Answers the run: run_id, status, steps, last_seq."""
        return await call(ctx, lambda c: c.start_run(plan_id, version, executor), views.run)

    @server.tool(title="Read a run", annotations=_READS)
    async def get_run(ctx: Context[Any, Any], run_id: RunId) -> Annotated[CallToolResult, RunOut]:
        """A run's status (queued, running, awaiting_approval, needs_replan, succeeded,
        failed, budget_exhausted, cancelled), finished, its steps with their status, output
        and errors, and last_seq, the seq of its newest event."""
        return await call(ctx, lambda c: c.get_run(run_id), views.run)

    @server.tool(title="Read a run's events", annotations=_READS)
    async def run_events(
        ctx: Context[Any, Any],
        run_id: RunId,
        after: Annotated[
            int, Field(ge=0, description="Only events with a larger seq (0: from the start).")
        ] = 0,
        limit: Annotated[int, Field(ge=1, le=1000, description="At most this many.")] = 200,
    ) -> Annotated[CallToolResult, EventsOut]:
        """The run's events after seq `after`, oldest first: every transition of the run and
        its steps (event_type such as step_started, step_succeeded, step_failed,
        run_succeeded), with who and why. Pass the answer's last_seq as after to read on;
        more: true means more are waiting."""
        return await call(
            ctx,
            lambda c: c.events(run_id, after=after, limit=limit),
            lambda found: views.events(run_id, found, after, limit),
        )

    _tools_only(server)
    _arguments_checked(server)
    return server


# The requests of the capabilities MCPServer always registers; Forge serves no prompts
# and no resources, so it advertises neither (an empty capability invites clients to ask).
_NOT_SERVED = (
    "prompts/list",
    "prompts/get",
    "resources/list",
    "resources/read",
    "resources/templates/list",
)


def _tools_only(server: MCPServer[Any]) -> None:
    # The SDK offers no public way to leave a handler out of MCPServer; its capabilities
    # are derived from the registered handlers.
    handlers = server._lowlevel_server._request_handlers
    for method in _NOT_SERVED:
        handlers.pop(method, None)


def _arguments_checked(server: MCPServer[Any]) -> None:
    """Check each call's arguments against its tool's input schema first, so a violation
    is a tool error in Forge's shape (``validation_error`` with ``errors``, each
    ``{"loc", "msg"}``, as the API answers one) instead of the SDK's pydantic text."""
    lowlevel = server._lowlevel_server
    entry = lowlevel.get_request_handler("tools/call")
    assert entry is not None
    inner = entry.handler
    validators: dict[str, Draft202012Validator] = {}

    async def checked(ctx: ServerRequestContext[Any, Any], params: BaseModel) -> Any:
        assert isinstance(params, CallToolRequestParams)
        if not validators:
            for tool in await server.list_tools():
                validators[tool.name] = Draft202012Validator(tool.input_schema)
        validator = validators.get(params.name)
        if validator is not None:
            errors = [
                {"loc": ["arguments", *error.absolute_path], "msg": error.message}
                for error in sorted(
                    validator.iter_errors(params.arguments or {}), key=lambda e: list(e.path)
                )
            ]
            if errors:
                return views.refusal(
                    ForgeApiError(
                        f"the arguments of {params.name} do not match its input schema",
                        code="validation_error",
                        status=422,
                        body={"errors": errors},
                    )
                )
        return await inner(ctx, params)

    lowlevel.add_request_handler("tools/call", entry.params_type, checked)
