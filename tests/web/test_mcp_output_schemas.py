"""/mcp's own tools declare their answers' shapes (issue 29, item 4): tools/list, as the
MCP SDK's client reads it, gives every tool an outputSchema, and each answer of an agent's
whole flow (compile, submit, status, wait, start, read the run and its events) validates
against its tool's schema; a refusal (isError) keeps the error shape instead."""

from __future__ import annotations

from typing import Any

import pytest
from jsonschema import Draft202012Validator

from forge.mcp_server.tools import TOOL_NAMES
from plans import services as plan_services
from plans.models import PlanVersion

from .mcp_helpers import conversation

pytestmark = pytest.mark.django_db(transaction=True)

PLAN = {
    "goal": "Say hello twice",
    "steps": [
        {"id": "hello", "description": "Say hello", "tool": "echo", "args": {"text": "hi"}},
        {
            "id": "again",
            "description": "Say it again",
            "tool": "echo",
            "args": {"text": "hi again"},
            "depends_on": ["hello"],
        },
    ],
}


@pytest.fixture
def workspaces(settings, tmp_path):
    settings.FORGE_WORKSPACES = str(tmp_path / "workspaces")


def schemas(token: str) -> dict[str, Any]:
    async def talk(client: Any) -> Any:
        return (await client.list_tools()).tools

    return {tool.name: tool.output_schema for tool in conversation(token, talk)}


def test_every_tool_declares_an_output_schema_that_names_next(author, token_for):
    declared = schemas(token_for(author))

    assert set(declared) == set(TOOL_NAMES)
    for name, schema in declared.items():
        assert schema is not None, name
        Draft202012Validator.check_schema(schema)
        assert schema["type"] == "object"
        assert "next" in schema["properties"], name
    assert {"ok", "diagnostics", "graph"} <= set(declared["compile_plan"]["required"])
    assert {"timed_out", "waited_s", "status"} <= set(declared["wait_for_approval"]["required"])
    assert {"run_id", "status", "steps", "last_seq"} <= set(declared["get_run"]["required"])
    assert {"events", "last_seq", "more"} <= set(declared["run_events"]["required"])


def test_each_answer_of_an_agents_flow_validates_against_its_tools_schema(
    author, approver, operator, token_for, workspaces
):
    token = token_for(author)
    declared = schemas(token)
    answered: dict[str, Any] = {}

    async def ask(client: Any, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        result = await client.call_tool(tool, arguments)
        assert not result.is_error, result.structured_content
        answered[tool] = result.structured_content
        return result.structured_content

    async def author_side(client: Any) -> None:
        await ask(client, "compile_plan", {"document": PLAN})
        submitted = await ask(client, "submit_plan", {"name": "Hello", "document": PLAN})
        ids = {"plan_id": submitted["plan_id"], "version": submitted["version"]}
        await ask(client, "plan_status", ids)
        await ask(client, "wait_for_approval", {**ids, "timeout_s": 0})

    conversation(token, author_side)
    version = PlanVersion.objects.get()
    plan_services.approve(version, approver, "fine")
    ids = {"plan_id": version.plan_id, "version": version.number}

    async def run_side(client: Any) -> None:
        decided = await ask(client, "plan_status", ids)
        assert decided["decision"]["reviewer"] == "approver"
        started = await ask(client, "start_run", ids)
        await ask(client, "get_run", {"run_id": started["run_id"]})
        await ask(client, "run_events", {"run_id": started["run_id"]})

    conversation(token_for(operator), run_side)

    assert set(answered) == set(TOOL_NAMES)
    for tool, content in answered.items():
        errors = list(Draft202012Validator(declared[tool]).iter_errors(content))
        assert errors == [], (tool, [e.message for e in errors])
    assert answered["plan_status"]["decision"]["decision"] == "approved"
    assert answered["run_events"]["events"], "a started run has events"


def test_a_refusal_is_not_held_to_the_schema(author, token_for):
    async def talk(client: Any) -> Any:
        return await client.call_tool("get_run", {"run_id": 999})

    result = conversation(token_for(author), talk)

    assert result.is_error
    assert result.structured_content["error"]["code"] in ("not_found", "permission_denied")
