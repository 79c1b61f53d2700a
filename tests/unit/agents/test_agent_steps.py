"""Agent steps through LocalRun: a model chooses the calls, the ToolExecutor runs them."""

from __future__ import annotations

import json

from forge.agents import AgentRunner
from forge.models import ModelReply, ScriptedModel, ToolCall
from forge.runners import RunContext
from forge.runtime import ApprovalSigner
from forge.runtime.agent_port import AgentGrant

from .conftest import agent_plan

SIGNER_OTHER = ApprovalSigner(b"someone-elses-key-0123456789abcd")


def call(name, **arguments):
    return ToolCall(f"call_{name}", name, arguments)


def asks(*calls, tokens=0):
    return ModelReply("", tuple(calls), tokens=tokens)


def answer(value, tokens=0):
    return ModelReply(value if isinstance(value, str) else json.dumps(value), tokens=tokens)


READ_NOTES = {
    "id": "summarise",
    "tools_allowed": ["file_read"],
    "done_when": {"required_keys": ["facts"], "checks": ["length(facts) > `0`"]},
}


def test_an_allowed_call_runs_through_the_executor_and_the_answer_is_the_output(harness):
    (harness.workspace / "notes.md").write_text("ACME pays late\n")
    model = ScriptedModel([asks(call("file_read", path="notes.md")), answer({"facts": ["late"]})])

    result = harness.run(agent_plan(READ_NOTES), model)

    assert result.status == "succeeded"
    assert result.state.steps["summarise"].output == {"facts": ["late"]}
    [record] = harness.records.records
    assert (record.step_id, record.tool, record.status) == ("summarise", "file_read", "succeeded")
    assert harness.executor.calls == 1
    assert [c.tools for c in model.calls] == [("file_read",), ("file_read",)]
    tool_message = model.calls[1].messages[-1]
    assert tool_message.role == "tool" and tool_message.tool_call_id == "call_file_read"
    assert json.loads(tool_message.content) == {
        "ok": True,
        "output": {"path": "notes.md", "content": "ACME pays late\n"},
    }


def test_a_call_to_a_tool_outside_tools_allowed_is_refused_and_never_executed(harness):
    model = ScriptedModel(
        [asks(call("file_write", path="x.md", content="pwned")), answer({"facts": ["none"]})]
    )

    result = harness.run(agent_plan(READ_NOTES), model)

    assert result.status == "succeeded"
    assert not (harness.workspace / "x.md").exists()
    assert harness.executor.calls == 0
    [record] = harness.records.records
    assert (record.tool, record.status, record.error_code) == (
        "file_write", "refused", "tool_not_allowed",
    )  # fmt: skip
    told = json.loads(model.calls[1].messages[-1].content)
    assert told == {
        "ok": False,
        "error": "tool 'file_write' is not in step 'summarise''s tools_allowed (file_read)",
        "code": "tool_not_allowed",
    }


def test_arguments_against_the_schema_are_told_to_the_model_which_can_correct_them(harness):
    (harness.workspace / "notes.md").write_text("ok\n")
    model = ScriptedModel(
        [
            asks(call("file_read", file="notes.md")),
            asks(call("file_read", path="notes.md")),
            answer({"facts": ["ok"]}),
        ]
    )

    result = harness.run(agent_plan(READ_NOTES), model)

    assert result.status == "succeeded"
    assert json.loads(model.calls[1].messages[-1].content)["code"] == "invalid_args"
    assert [r.status for r in harness.records.records] == ["refused", "succeeded"]


def test_a_failed_call_goes_back_to_the_model_instead_of_failing_the_step(harness):
    model = ScriptedModel([asks(call("file_read", path="missing.md")), answer({"facts": ["-"]})])

    result = harness.run(agent_plan(READ_NOTES), model)

    assert result.status == "succeeded"
    assert json.loads(model.calls[1].messages[-1].content)["code"] == "file_not_found"


def test_the_agent_is_told_the_goal_the_step_its_contract_and_its_inputs(harness):
    document = agent_plan(
        {"id": "gather", "tool": "echo", "args": {"facts": [1, 2]}},
        {**READ_NOTES, "depends_on": ["gather"]},
    )
    model = ScriptedModel([answer({"facts": [3]})])

    harness.run(document, model)

    system, user = model.calls[0].messages
    assert system.role == "system" and "one JSON object" in system.content
    assert user.content.splitlines() == [
        "Plan goal: Generate a supplier risk report",
        "Step: summarise",
        "Description: Work out the summarise of the report",
        "Required keys: facts",
        "Check 1: length(facts) > `0`",
        "Inputs (the outputs of the steps this one depends on), as data:",
        '- gather: <tool-data>{"facts": [1, 2]}</tool-data>',
        "Tools you may call: file_read",
    ]


def test_tokens_and_cost_of_every_turn_count_into_the_run(harness):
    (harness.workspace / "notes.md").write_text("x\n")
    model = ScriptedModel(
        [
            ModelReply("", (call("file_read", path="notes.md"),), tokens=30, cost=0.01),
            ModelReply('{"facts": [1]}', tokens=40, cost=0.02),
        ]
    )

    result = harness.run(agent_plan(READ_NOTES), model)

    assert result.state.used_tokens == 70
    assert result.state.used_cost == 0.03
    [finished] = [e for e in result.events if e.event_type == "step_succeeded"]
    assert (finished.tokens, finished.model) == (70, "scripted")


def test_an_agent_step_past_the_runs_token_budget_fails_with_budget_exceeded(harness):
    (harness.workspace / "notes.md").write_text("x\n")
    model = ScriptedModel(
        [
            asks(call("file_read", path="notes.md"), tokens=30),
            asks(call("file_read", path="notes.md"), tokens=30),
        ]
    )

    result = harness.run(agent_plan(READ_NOTES, budget={"max_tokens": 50}), model)

    step = result.state.steps["summarise"]
    assert step.status == "failed"
    assert step.error == "step 'summarise' used 60 tokens, over its allowance of 50"
    assert result.state.used_tokens == 60
    assert harness.executor.calls == 1  # the over-budget turn's call never ran


def test_a_small_token_budget_used_up_by_an_agent_step_exhausts_the_run(harness):
    document = agent_plan(
        READ_NOTES,
        {"id": "publish", "tool": "noop", "depends_on": ["summarise"],
         "estimate": {"tokens": 1}},
        budget={"max_tokens": 100},
    )  # fmt: skip

    result = harness.run(document, ScriptedModel([answer({"facts": [1]}, tokens=100)]))

    assert result.status == "budget_exhausted"
    assert result.state.steps["summarise"].status == "succeeded"
    assert result.state.steps["publish"].status == "cancelled"  # nothing stays ready


def test_the_steps_estimate_is_its_allowance(harness):
    document = agent_plan({**READ_NOTES, "estimate": {"tokens": 20}})

    result = harness.run(document, ScriptedModel([answer({"facts": [1]}, tokens=21)]))

    assert result.state.steps["summarise"].error.endswith("over its allowance of 20")


def test_an_answer_that_is_not_a_json_object_becomes_the_answer_key(harness):
    document = agent_plan({"id": "ask", "tools_allowed": ["file_read"]})

    result = harness.run(document, ScriptedModel([answer("ACME is the riskiest")]))

    assert result.state.steps["ask"].output == {"answer": "ACME is the riskiest"}


def test_a_fenced_json_answer_is_read_as_json(harness):
    document = agent_plan({"id": "ask", "tools_allowed": ["file_read"]})

    result = harness.run(document, ScriptedModel([answer('```json\n{"risk": 3}\n```')]))

    assert result.state.steps["ask"].output == {"risk": 3}


def test_an_answer_that_misses_the_contract_is_sent_back_while_turns_remain(harness):
    model = ScriptedModel([answer({"facts": []}), answer({"facts": ["late"]})])

    result = harness.run(agent_plan(READ_NOTES), model)

    assert result.status == "succeeded"
    assert model.calls[1].messages[-1].content == (
        "That answer does not satisfy the step: check 1 failed: length(facts) > `0` with "
        "length(facts) = 0, facts = []. "
        "Answer again with one JSON object that does."
    )


def test_a_last_answer_that_misses_the_contract_leaves_the_step_invalid(harness):
    result = harness.run(
        agent_plan(READ_NOTES), ScriptedModel([answer({"facts": []})]), max_turns=1
    )

    assert result.state.steps["summarise"].status == "invalid"
    assert result.status == "needs_replan"


def test_an_agent_that_keeps_calling_tools_fails_after_max_turns(harness):
    (harness.workspace / "notes.md").write_text("x\n")
    model = ScriptedModel([asks(call("file_read", path="notes.md"))] * 3)

    result = harness.run(agent_plan(READ_NOTES), model, max_turns=3)

    step = result.state.steps["summarise"]
    assert step.status == "failed"
    assert step.error == "step 'summarise' did not finish within 3 model turns"
    assert step.output == {"calls": [{"tool": "file_read", "status": "succeeded", "code": ""}] * 3}


def test_a_model_error_fails_the_step_with_the_models_code(harness):
    result = harness.run(agent_plan(READ_NOTES), ScriptedModel([]))

    [failed] = [e for e in result.events if e.event_type == "step_failed"]
    assert failed.blocked_reason == "the scripted model has no reply left after 0"
    assert result.state.steps["summarise"].status == "failed"


def test_a_call_needing_approval_fails_the_step_without_the_steps_approval(harness):
    document = agent_plan(
        {"id": "write", "tools_allowed": ["file_write"]},
        requires_approval_before=["file_write"],
    )
    node = harness.graph(document).nodes["write"]
    model = ScriptedModel([asks(call("file_write", path="r.md", content="hi"))])
    context = RunContext("run-1", "write", harness.workspace, timeout_s=10)

    result = AgentRunner(model, harness.executor).run_step(
        node, context, {}, AgentGrant(approval_scopes=("file_write",))
    )

    assert (result.status, result.error_code) == ("failed", "approval_required")
    assert not (harness.workspace / "r.md").exists()
    [record] = harness.records.records
    assert (record.status, record.error_code) == ("refused", "approval_required")


def test_under_the_steps_approval_each_call_runs_with_a_token_for_its_exact_arguments(harness):
    document = agent_plan(
        {"id": "write", "tools_allowed": ["file_write"]},
        requires_approval_before=["file_write"],
    )
    model = ScriptedModel([asks(call("file_write", path="r.md", content="hi")), answer({})])

    waiting = harness.run(document, ScriptedModel([]))
    approved = harness.run(document, model, approver="carol")

    assert waiting.status == "awaiting_approval"
    assert approved.status == "succeeded"
    assert (harness.workspace / "r.md").read_text() == "hi"
    assert json.loads(model.calls[1].messages[-1].content)["output"]["committed"] is True


def test_a_forged_step_approval_is_refused(harness):
    document = agent_plan(
        {"id": "write", "tools_allowed": ["file_write"]},
        requires_approval_before=["file_write"],
    )
    node = harness.graph(document).nodes["write"]
    token = SIGNER_OTHER.issue("run-1", "write", node.fingerprint, "mallory")
    model = ScriptedModel([asks(call("file_write", path="r.md", content="hi"))])
    context = RunContext("run-1", "write", harness.workspace, timeout_s=10)

    result = AgentRunner(model, harness.executor).run_step(
        node, context, {}, AgentGrant(approval_scopes=("file_write",), token=token)
    )

    assert result.error_code == "approval_invalid"
    assert not (harness.workspace / "r.md").exists()
