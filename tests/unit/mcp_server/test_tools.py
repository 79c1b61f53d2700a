"""Forge's MCP tools, called through the SDK's own client in-process, against a fake of the
REST API: the tool list an agent sees, the JSON each tool answers, and refusals that say
why with the API's code."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
from mcp import Client
from mcp.types import CallToolResult

from forge.client import AsyncForgeClient
from forge.mcp_server import MAX_WAIT_S, TOOL_NAMES, build_server

from ..client.fake_api import (
    BASE,
    DIAGNOSTIC,
    TOKEN,
    FakeApi,
    FakeTime,
    event_json,
    plan_json,
    run_json,
    version_json,
)

WAIT_NEXT = "A person must decide: call wait_for_approval with plan_id=7, version=1."


def served(api: FakeApi, time: FakeTime | None = None) -> Any:
    time = time or FakeTime()

    @asynccontextmanager
    async def client_for(ctx: Any) -> AsyncIterator[AsyncForgeClient]:
        async with AsyncForgeClient(
            BASE, TOKEN, transport=api.transport(), sleep=time.async_sleep, clock=time.clock
        ) as client:
            yield client

    return build_server(client_for)


def talk(api: FakeApi, conversation: Callable[[Client], Awaitable[Any]], **kw: Any) -> Any:
    async def main() -> Any:
        async with Client(served(api, **kw)) as client:
            return await conversation(client)

    return anyio.run(main)


def call(api: FakeApi, tool: str, arguments: dict[str, Any], **kw: Any) -> CallToolResult:
    return talk(api, lambda client: client.call_tool(tool, arguments), **kw)  # type: ignore[no-any-return]


def text_of(result: CallToolResult) -> Any:
    return json.loads(result.content[0].text)  # type: ignore[union-attr]


def test_an_agent_sees_the_seven_tools_each_described_with_bounded_arguments():
    tools = {tool.name: tool for tool in talk(FakeApi(), lambda c: c.list_tools()).tools}

    assert tuple(tools) == TOOL_NAMES
    assert all(len(tool.description or "") > 80 for tool in tools.values())
    wait = tools["wait_for_approval"].input_schema
    assert wait["required"] == ["plan_id", "version"]
    assert wait["properties"]["timeout_s"]["maximum"] == MAX_WAIT_S == 600
    assert wait["properties"]["timeout_s"]["default"] == 60
    assert tools["run_events"].input_schema["properties"]["limit"]["maximum"] == 1000
    assert tools["plan_status"].annotations.read_only_hint is True
    assert tools["start_run"].annotations.read_only_hint is False
    assert "approved" in (tools["start_run"].description or "")


def test_submitting_a_plan_answers_its_status_diagnostics_and_what_to_do_next():
    api = FakeApi().on("POST", "/plans", (201, plan_json()))

    result = call(api, "submit_plan", {"name": "Release notes", "source": "goal: g",
                                       "format": "yaml", "note": "first"})  # fmt: skip

    assert not result.is_error
    assert api.seen[0].body == {
        "name": "Release notes",
        "note": "first",
        "submit": True,
        "source": "goal: g",
        "format": "yaml",
    }
    answer = result.structured_content
    assert answer is not None
    assert (answer["plan_id"], answer["version"], answer["status"], answer["author"]) == (
        7,
        1,
        "awaiting_approval",
        "agent",
    )
    assert [d["code"] for d in answer["diagnostics"]] == ["approval_required"]
    assert answer["decision"] is None
    assert answer["next"] == WAIT_NEXT
    assert text_of(result) == answer


def test_a_new_version_of_a_plan_is_submitted_by_its_id():
    api = FakeApi().on("POST", "/plans/7/versions", (201, version_json(number=2, parent=1)))

    result = call(api, "submit_plan", {"plan_id": 7, "document": {"goal": "g", "steps": []}})

    assert api.paths() == ["POST /api/v1/plans/7/versions"]
    assert api.seen[0].body["document"] == {"goal": "g", "steps": []}
    assert result.structured_content is not None
    assert (result.structured_content["version"], result.structured_content["parent"]) == (2, 1)


def test_a_submission_naming_both_or_neither_plan_is_refused_without_a_request():
    api = FakeApi()

    both = call(api, "submit_plan", {"name": "x", "plan_id": 7, "source": "goal: g"})
    neither = call(api, "submit_plan", {"source": "goal: g"})

    for result in (both, neither):
        assert result.is_error
        assert text_of(result)["error"] == {
            "code": "invalid_arguments",
            "detail": "give name (a new plan) or plan_id (a new version of it), not both",
        }
    assert api.seen == []


def test_a_plan_that_does_not_compile_says_so_and_how_to_go_on():
    api = FakeApi().on("POST", "/compile", (200, {"ok": False, "diagnostics": [DIAGNOSTIC],
                                                  "graph": None}))  # fmt: skip

    result = call(api, "compile_plan", {"document": {"goal": "g", "steps": []}})

    assert result.structured_content == {
        "ok": False,
        "diagnostics": [DIAGNOSTIC],
        "graph": None,
        "next": "Fix the errors in diagnostics and compile again.",
    }


def test_a_wait_that_runs_out_answers_timed_out_with_the_version_still_waiting():
    api = FakeApi().on("GET", "/plans/7/versions/1", (200, version_json()))
    time = FakeTime()

    result = call(api, "wait_for_approval", {"plan_id": 7, "version": 1, "timeout_s": 3},
                  time=time)  # fmt: skip

    assert not result.is_error
    answer = result.structured_content
    assert answer is not None
    assert (answer["timed_out"], answer["status"]) == (True, "awaiting_approval")
    assert time.now == 3
    assert answer["next"] == WAIT_NEXT


def test_a_version_its_approval_rules_still_hold_says_what_they_ask_for():
    waiting = version_json(waiting_for=["rule payments needs 1 of finance"])
    api = FakeApi().on("GET", "/plans/7/versions/1", (200, waiting))

    result = call(api, "wait_for_approval", {"plan_id": 7, "version": 1, "timeout_s": 1})

    answer = result.structured_content
    assert answer is not None
    assert (answer["timed_out"], answer["status"]) == (True, "awaiting_approval")
    assert answer["next"] == (
        "A person must decide (rule payments needs 1 of finance): call wait_for_approval "
        "with plan_id=7, version=1."
    )


def test_a_wait_ends_with_the_persons_decision_and_the_next_step():
    api = FakeApi().on(
        "GET", "/plans/7/versions/1", (200, version_json()), (200, version_json("approved"))
    )

    result = call(api, "wait_for_approval", {"plan_id": 7, "version": 1})

    answer = result.structured_content
    assert answer is not None
    assert (answer["timed_out"], answer["status"]) == (False, "approved")
    assert answer["decision"]["reviewer"] == "grace"
    assert answer["next"] == "Approved by grace: call start_run with plan_id=7, version=1."


def test_a_rejection_is_answered_with_the_reviewers_comment():
    api = FakeApi().on("GET", "/plans/7/versions/1", (200, version_json("rejected")))

    answer = call(api, "plan_status", {"plan_id": 7, "version": 1}).structured_content

    assert answer is not None
    assert answer["next"] == (
        'Rejected by grace ("no mail to outsiders"): revise the plan and call submit_plan '
        "with plan_id=7 to propose a new version."
    )


def test_a_wait_longer_than_ten_minutes_is_refused_by_the_schema_before_any_request():
    api = FakeApi()

    result = call(api, "wait_for_approval", {"plan_id": 7, "version": 1, "timeout_s": 601})

    assert result.is_error
    assert "600" in result.content[0].text  # type: ignore[union-attr]
    assert api.seen == []


def test_starting_an_unapproved_version_is_an_error_with_the_gates_code():
    refusal = {"detail": "plan 7 version 1 is not approved", "code": "not_approved"}
    api = FakeApi().on("POST", "/runs", (409, refusal))

    result = call(api, "start_run", {"plan_id": 7, "version": 1})

    assert result.is_error
    assert result.structured_content == {
        "error": {"status": 409, "code": "not_approved", "detail": refusal["detail"]},
        "next": "A person other than you must approve this version first: call "
        "wait_for_approval, then start_run again.",
    }


def test_a_superseded_version_points_the_agent_to_the_newer_one():
    api = FakeApi().on(
        "GET", "/plans/7/versions/1", (200, version_json("superseded", superseded_by=2))
    )

    answer = call(api, "wait_for_approval", {"plan_id": 7, "version": 1}).structured_content

    assert answer is not None
    assert (answer["timed_out"], answer["status"], answer["superseded_by"]) == (
        False, "superseded", 2
    )  # fmt: skip
    assert answer["next"] == (
        "Superseded by v2, submitted while it waited: it can never be approved or run. "
        "Call wait_for_approval with plan_id=7, version=2."
    )


def test_starting_a_superseded_version_says_where_to_go_on():
    refusal = {"detail": "version 1 was superseded by v2", "code": "superseded",
               "superseded_by": 2}  # fmt: skip
    api = FakeApi().on("POST", "/runs", (409, refusal))

    result = call(api, "start_run", {"plan_id": 7, "version": 1})

    assert result.is_error
    assert result.structured_content is not None
    assert result.structured_content["error"]["code"] == "superseded"
    assert result.structured_content["next"] == (
        "A newer version of this plan was submitted: this one can never be approved or run. "
        "Use the version the error names (superseded_by)."
    )


def test_a_started_run_and_its_events_are_answered_compactly_with_where_to_read_on():
    api = (
        FakeApi()
        .on("POST", "/runs", (201, run_json()))
        .on("GET", "/runs/3/events", (200, [event_json(3, "step_started", "read"),
                                            event_json(4, "run_succeeded")]))
    )  # fmt: skip

    started = call(api, "start_run", {"plan_id": 7, "version": 1}).structured_content
    read = call(api, "run_events", {"run_id": 3, "after": 2, "limit": 2}).structured_content

    assert started is not None and read is not None
    assert (started["run_id"], started["status"], started["finished"]) == (3, "queued", False)
    assert started["steps"] == [{"id": "read", "status": "ready", "tool": "file_read",
                                 "attempt": 0}]  # fmt: skip
    assert started["next"] == (
        "The run is queued; call run_events with run_id=3, after=2 to follow it."
    )
    assert api.seen[1].query == {"after": "2", "limit": "2"}
    assert [(e["seq"], e["event_type"]) for e in read["events"]] == [
        (3, "step_started"),
        (4, "run_succeeded"),
    ]
    assert "facts" not in read["events"][0]  # empty fields are left out
    assert (read["last_seq"], read["more"]) == (4, True)
    assert read["next"] == "More events wait: call run_events with run_id=3, after=4."


def test_no_new_events_keeps_the_seq_the_agent_gave():
    api = FakeApi().on("GET", "/runs/3/events", (200, []))

    read = call(api, "run_events", {"run_id": 3, "after": 9}).structured_content

    assert read is not None
    assert (read["events"], read["last_seq"], read["more"]) == ([], 9, False)


def test_a_token_without_the_role_is_told_so():
    refusal = {"detail": "Needs permission run.start", "code": "permission_denied"}
    api = FakeApi().on("POST", "/runs", (403, refusal))

    result = call(api, "start_run", {"plan_id": 7, "version": 1})

    assert result.is_error
    assert text_of(result)["error"]["code"] == "permission_denied"
    assert "role" in text_of(result)["next"]
