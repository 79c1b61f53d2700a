"""LLMPlanner against a real local HTTP server answering chat completions."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from forge.compiler import GraphCompiler
from forge.models import ModelError, OpenAICompatibleModel, ScriptedModel
from forge.plan import from_data, to_data
from forge.planners import LLMPlanner, Observation, PlannerOutputInvalid
from forge.planners.llm import ANSWER_SCHEMA
from forge.runners import RunContext, RunnerOutcome, builtin_runners
from forge.runtime import ApprovalSigner, InMemoryRecordStore, ToolExecutor
from forge.runtime.local import LocalRun
from forge.tools import BUILTIN_TOOLS, Policy, PolicyEngine, ToolRegistry, ToolSpec

PLAN = {
    "schema": "forge.plan/v1",
    "goal": "Score the supplier risk",
    "steps": [
        {"id": "gather", "description": "Collect the contract facts", "depends_on": [],
         "tool": "echo", "args": {"facts": ["late"]}},
        {"id": "score", "description": "Score the risk from the facts", "depends_on": ["gather"],
         "tool": "echo", "args": {"risk": 3}, "done_when": {"checks": ["risk <= `10`"]}},
    ],
}  # fmt: skip


def planner(server, **options) -> LLMPlanner:
    model = OpenAICompatibleModel(server.base_url, "fake-model")
    return LLMPlanner(model, **options)


def test_a_valid_plan_from_the_endpoint_becomes_a_structured_plan(fake_openai):
    fake_openai.reply(json.dumps(PLAN), tokens=900)
    echo = next(spec for spec in BUILTIN_TOOLS if spec.name == "echo")

    proposal = planner(fake_openai, tools=[echo]).plan("Score the supplier risk", Observation())

    assert proposal.document == from_data(PLAN)
    assert (proposal.parent_version, proposal.reason) == (None, "plan for: Score the supplier risk")
    assert (proposal.planner, proposal.tokens, proposal.model) == (
        "llm:fake-model",
        900,
        "fake-model",
    )
    request = fake_openai.requests[0]
    assert request["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "forge_plan", "schema": ANSWER_SCHEMA, "strict": False},
    }
    assert "tools" not in request
    system, user = request["messages"]
    assert "- echo (scope compute, side effect none): Returns its arguments" in system["content"]
    assert user == {"role": "user", "content": "Task: Score the supplier risk\nWrite the plan."}


def test_a_plan_in_a_fenced_block_is_read(fake_openai):
    fake_openai.reply(f"```json\n{json.dumps(PLAN)}\n```")

    assert planner(fake_openai).plan("task", Observation()).document == from_data(PLAN)


@pytest.mark.parametrize(
    ("content", "reason_code"),
    [
        ("Here is your plan: step one, gather facts", "invalid_json"),
        (json.dumps({**PLAN, "owner": "me"}), "invalid_document"),
        (json.dumps({"goal": "x", "steps": [{"id": "no spaces allowed"}]}), "invalid_id"),
    ],
    ids=["prose", "unknown field", "bad id"],
)
def test_an_answer_that_is_not_a_valid_plan_raises_invalid_plan_output(
    fake_openai, content, reason_code
):
    fake_openai.reply(content)

    with pytest.raises(PlannerOutputInvalid) as caught:
        planner(fake_openai).plan("task", Observation())

    assert caught.value.code == "invalid_plan_output"
    assert caught.value.reason_code == reason_code
    assert caught.value.message.startswith("the model's answer is not a valid plan document")


def test_tool_calls_instead_of_a_plan_are_invalid_output(fake_openai):
    fake_openai.reply(None, [("echo", {})])

    with pytest.raises(PlannerOutputInvalid, match="called tools"):
        planner(fake_openai).plan("task", Observation())


def test_an_endpoint_without_structured_output_is_asked_again_without_it(fake_openai):
    fake_openai.respond(400, {"error": {"message": "response_format json_schema unsupported"}})
    fake_openai.reply(json.dumps(PLAN))
    fake_openai.reply(json.dumps(PLAN))
    llm = planner(fake_openai)

    llm.plan("task", Observation())
    llm.plan("task", Observation())

    assert ["response_format" in request for request in fake_openai.requests] == [
        True,
        False,
        False,
    ]


def test_other_endpoint_errors_are_model_errors_with_their_code(fake_openai):
    fake_openai.respond(500, {"error": {"message": "boom"}})

    with pytest.raises(ModelError) as caught:
        planner(fake_openai).plan("task", Observation())

    assert (caught.value.code, caught.value.status) == ("model_http_error", 500)


# A replan, run for real: "notify" sends an e-mail (external, not idempotent), then
# "score" breaks its contract; the planner must be told all of it.

SEND_EMAIL = ToolSpec(
    name="send_email",
    description="Sends an e-mail.",
    args_schema={"type": "object", "properties": {"to": {"type": "string"}},
                 "required": ["to"], "additionalProperties": False},
    permission_scope="email",
    side_effect="external",
    idempotent=False,
)  # fmt: skip

FIRST = {
    "goal": "Score the supplier risk",
    "steps": [
        {"id": "notify", "description": "Tell the buyer the review started",
         "tool": "send_email", "args": {"to": "buyer@example.com"}},
        {"id": "score", "description": "Score the risk from the facts", "depends_on": ["notify"],
         "tool": "echo", "args": {"risk": 42}, "done_when": {"checks": ["risk <= `10`"]}},
    ],
}  # fmt: skip
FIXED = {**FIRST, "steps": [FIRST["steps"][0], {**FIRST["steps"][1], "args": {"risk": 3}}]}


class Outbox:
    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []

    def run(self, tool: ToolSpec, args: Mapping[str, Any], context: RunContext) -> RunnerOutcome:
        self.sent.append(dict(args))
        return RunnerOutcome.success({"sent": True})


def replanning_run(tmp_path: Path, llm: LLMPlanner) -> tuple[LocalRun, Outbox]:
    registry = ToolRegistry([*BUILTIN_TOOLS, SEND_EMAIL])
    policy = PolicyEngine(Policy.allowing(["compute", "email"]))
    outbox = Outbox()
    runners = {**builtin_runners(), "send_email": outbox}
    executor = ToolExecutor(
        registry, policy, InMemoryRecordStore(), runners, approvals=ApprovalSigner(b"k" * 32)
    )
    local = LocalRun(
        GraphCompiler(registry, policy), executor, tmp_path, planner=llm, approver="carol"
    )
    return local, outbox


def test_a_replan_request_carries_the_failure_the_completed_steps_and_the_side_effects(
    fake_openai, tmp_path
):
    fake_openai.reply(json.dumps(FIXED), tokens=500)
    local, outbox = replanning_run(tmp_path, planner(fake_openai))

    result = local.run(from_data(FIRST))

    assert result.status == "succeeded"
    assert outbox.sent == [{"to": "buyer@example.com"}]  # preserved, never sent again
    assert [d.goal for d in result.versions] == ["Score the supplier risk"] * 2
    lines = fake_openai.messages()[1]["content"].splitlines()
    [notify_hash] = {e.tool_args_hash for e in result.events if e.step_id == "notify"}
    assert lines[:3] == [
        "Goal: Score the supplier risk",
        "The run of the current plan (version 1) stopped and needs a new version.",
        "Current plan:",
    ]
    assert json.loads(lines[3]) == to_data(from_data(FIRST))
    assert "Failed step: score" in lines
    # What a tool produced (the error quotes the output's values) is quoted data.
    error = '"check 1 failed: risk \\u003c= `10` with risk = 42"'
    assert f"Its error: <tool-data>{error}</tool-data>" in lines
    assert '- notify: <tool-data>{"sent": true}</tool-data>' in lines
    assert f"- send_email by step notify (arguments hash {notify_hash})" in lines


def test_an_invalid_replan_is_refused_and_nothing_of_it_runs(fake_openai, tmp_path):
    broken = {**FIXED, "steps": [*FIXED["steps"], {"id": "extra", "tool": "echo", "when": "now"}]}
    fake_openai.reply(json.dumps(broken))
    local, outbox = replanning_run(tmp_path, planner(fake_openai))

    result = local.run(from_data(FIRST))

    assert result.status == "needs_replan"
    assert "[invalid_plan_output]" in result.stop_reason
    assert len(result.versions) == 1
    assert local.executor.calls == 2  # notify and score of version 1, nothing after
    assert outbox.sent == [{"to": "buyer@example.com"}]


def test_the_planner_names_itself_after_the_model():
    assert LLMPlanner(ScriptedModel([], name="scripted:replies.yaml")).name == "llm:replies.yaml"
    assert LLMPlanner(ScriptedModel([], name="mine")).name == "llm:mine"
