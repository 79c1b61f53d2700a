"""Tools: known, authorised by the policy, called with valid arguments, approved, and not
repeating a side effect an earlier version already performed."""

from __future__ import annotations

import datetime
import hashlib
from typing import Any

from forge.compiler import CompileResult, GraphCompiler, PerformedSideEffect
from forge.compiler.bindings import AGENT_TOOLS_HINT
from forge.plan import canonical_json, from_data
from forge.plan.formats import load_plan
from forge.tools import (
    DEFAULT_POLICY,
    Policy,
    PolicyEngine,
    ToolRegistry,
    ToolSpec,
    builtin_registry,
)


def found(result: CompileResult, code: str) -> list[dict[str, Any]]:
    return [d.to_data() for d in result.diagnostics if d.code == code]


def error(code: str, message: str, node: str) -> dict[str, Any]:
    return {"code": code, "severity": "error", "message": message, "nodes": [node], "edges": []}


def sha256_of(args: dict[str, Any]) -> str:
    return hashlib.sha256(canonical_json(args).encode()).hexdigest()


def test_a_tool_missing_from_the_registry_is_unknown(step, compile_plan):
    result = compile_plan([step("a", tool="teleport", args={})])

    assert found(result, "unknown_tool") == [
        error("unknown_tool", "step 'a' uses unknown tool 'teleport'", "a")
    ]
    assert result.graph is None


def test_an_allowed_tool_missing_from_the_registry_is_unknown(step, compile_plan):
    result = compile_plan([step("a", tool=None, args=None, tools_allowed=["file_read", "sql"])])

    assert found(result, "unknown_tool") == [
        error("unknown_tool", "step 'a' allows unknown tool 'sql'", "a")
    ]


# Issue 25, item 7: an unknown tool that is one slip from a registered one names it.


def test_an_unknown_tool_close_to_a_registered_one_hints_did_you_mean(step, compile_plan):
    result = compile_plan([step("a", tool="http_reqest", args={})])

    assert found(result, "unknown_tool") == [
        {
            **error("unknown_tool", "step 'a' uses unknown tool 'http_reqest'", "a"),
            "hint": "did you mean `http_request`?",
        }
    ]


def test_an_unknown_allowed_tool_hints_too_and_names_every_close_tool(step, compile_plan):
    result = compile_plan([step("a", tool=None, args=None, tools_allowed=["file_wirte"])])

    [diagnostic] = found(result, "unknown_tool")
    assert diagnostic["message"] == "step 'a' allows unknown tool 'file_wirte'"
    assert diagnostic["hint"] == "did you mean `file_write` or `file_read`?"


def test_did_you_mean_names_the_tools_of_the_registry_the_compiler_was_given():
    registry = ToolRegistry(
        [ToolSpec("mail.send_message", "Send a mail", {"type": "object"}, "mcp.mail")]
    )
    plan = {"goal": "Tell them", "steps": [{"id": "tell", "description": "Mail the supplier",
                                           "tool": "mail.send_mesage", "args": {}}]}  # fmt: skip
    result = GraphCompiler(registry, PolicyEngine(Policy.allowing(["mcp.mail"]))).compile(
        from_data(plan)
    )

    [diagnostic] = found(result, "unknown_tool")
    assert diagnostic["hint"] == "did you mean `mail.send_message`?"


def test_an_unknown_tool_like_no_registered_one_has_no_hint(step, compile_plan):
    [diagnostic] = found(compile_plan([step("a", tool="teleport", args={})]), "unknown_tool")

    assert "hint" not in diagnostic


def test_a_step_with_neither_tool_nor_tools_allowed_is_an_agent_step_asking_for_tools(
    step, compile_plan
):
    # Issue 12, problem 2: this was unknown_tool ("names no tool"), which sent the author
    # looking for a tool that does not exist, and said nothing of the fix.
    result = compile_plan([step("a", tool=None, args=None)])

    assert found(result, "unknown_tool") == []
    [diagnostic] = found(result, "agent_without_tools")
    assert diagnostic == {
        **error("agent_without_tools", "step 'a' is an agent step with no allowed tools yet", "a"),
        "hint": AGENT_TOOLS_HINT,
    }
    assert "tools_allowed" in diagnostic["hint"] and "Tools allowed" in diagnostic["hint"]
    assert result.graph is None


def test_a_mermaid_flowchart_imports_as_agent_steps_that_ask_for_their_tools():
    document = load_plan("flowchart TD\n  a[Fetch the data] --> b[Write the report]\n", "mermaid")
    result = GraphCompiler(builtin_registry(), PolicyEngine(DEFAULT_POLICY)).compile(document)

    assert [(d.code, d.nodes) for d in result.errors] == [
        ("agent_without_tools", ("a",)),
        ("agent_without_tools", ("b",)),
    ]


def test_a_tool_the_policy_does_not_allow_is_unauthorized(step, compile_plan):
    result = compile_plan(
        [step("a", tool="shell", args={"argv": ["make"]})], policy=Policy.allowing(["compute"])
    )

    assert found(result, "unauthorized_tool") == [
        error(
            "unauthorized_tool", "step 'a': policy does not allow tool 'shell' (scope 'shell')", "a"
        )
    ]
    assert result.graph is None


def test_an_empty_policy_denies_every_tool(step, compile_plan):
    result = compile_plan(
        [step("a", tools_allowed=["echo"]), step("b", "a", tool="noop", args={})], policy=Policy()
    )

    assert [d["message"] for d in found(result, "unauthorized_tool")] == [
        "step 'a': policy does not allow tool 'echo' (scope 'compute')",
        "step 'b': policy does not allow tool 'noop' (scope 'compute')",
    ]
    assert result.graph is None


def test_a_tool_outside_the_steps_own_tools_allowed_is_unauthorized(step, compile_plan):
    result = compile_plan([step("a", tools_allowed=["file_read"])])

    assert found(result, "unauthorized_tool") == [
        error(
            "unauthorized_tool",
            "step 'a' calls 'echo', which its tools_allowed (file_read) does not include",
            "a",
        )
    ]


def test_arguments_that_break_the_schema_are_invalid(step, compile_plan):
    result = compile_plan([step("a", tool="sleep", args={"seconds": -1})])

    assert found(result, "invalid_args") == [
        error(
            "invalid_args",
            "step 'a': arguments of 'sleep': data.seconds must be bigger than or equal to 0",
            "a",
        )
    ]
    assert result.graph is None


def test_an_unauthorized_tool_still_has_its_arguments_checked(step, compile_plan):
    result = compile_plan([step("a", tool="shell", args={})], policy=Policy.allowing(["compute"]))

    assert [d["code"] for d in result.to_data()["diagnostics"]] == [
        "unauthorized_tool",
        "invalid_args",
    ]


def test_arguments_that_are_not_json_are_invalid(step, compile_plan):
    result = compile_plan([step("a", args={"when": datetime.date(2024, 5, 1)})])

    assert found(result, "invalid_args") == [
        error(
            "invalid_args",
            "step 'a': arguments are not JSON: Object of type date is not JSON serializable",
            "a",
        )
    ]


def test_an_agent_step_with_arguments_is_refused_rather_than_ignored(step, compile_plan):
    result = compile_plan([step("a", tool=None, tools_allowed=["file_read"], args={"path": "x"})])

    assert found(result, "invalid_args") == [
        error(
            "invalid_args",
            "step 'a' gives args but no tool; an agent step chooses its own arguments, so "
            "name the tool or describe the input instead",
            "a",
        )
    ]


def test_a_step_whose_scope_the_plan_lists_waits_for_approval(step, compile_plan):
    result = compile_plan(
        [step("a", tool="shell", args={"argv": ["make", "report"]}, rollback_hint="make clean")],
        requires_approval_before=["shell"],
    )

    assert result.diagnostics[0].to_data() == {
        "code": "approval_required",
        "severity": "info",
        "message": "step 'a' will wait for approval: plan requires approval before scope 'shell'",
        "nodes": ["a"],
        "edges": [],
    }
    assert result.graph is not None
    node = result.graph.nodes["a"]
    assert node.approval_reasons == ("plan requires approval before scope 'shell'",)
    assert node.binding is not None
    assert node.binding.approval_reasons == node.approval_reasons


def test_the_plan_adds_approval_reasons_but_never_removes_the_policys(step, compile_plan):
    policy = Policy(allow={"shell": ("*",), "compute": ("*",)}, require_approval=("shell",))
    shell = step("a", tool="shell", args={"argv": ["make"]})

    without_plan_scopes = compile_plan([shell], policy=policy)
    with_plan_scopes = compile_plan([shell], policy=policy, requires_approval_before=["shell"])

    assert without_plan_scopes.graph is not None and with_plan_scopes.graph is not None
    assert without_plan_scopes.graph.nodes["a"].approval_reasons == (
        "policy requires approval for scope 'shell'",
    )
    assert with_plan_scopes.graph.nodes["a"].approval_reasons == (
        "policy requires approval for scope 'shell'",
        "plan requires approval before scope 'shell'",
    )


def test_a_high_risk_tool_waits_for_approval_whatever_the_plan_says(step):
    deploy = ToolSpec("deploy", "Deploys the service.", {"type": "object"}, "deploy", risk="high")
    compiler = GraphCompiler(ToolRegistry([deploy]), PolicyEngine(Policy.allowing(["deploy"])))

    result = compiler.compile(
        from_data({"goal": "Ship it", "steps": [step("ship", tool="deploy", args={})]})
    )

    assert [d.message for d in result.diagnostics] == [
        "step 'ship' will wait for approval: tool 'deploy' is high risk"
    ]


def test_an_agent_step_waits_for_approval_when_any_allowed_tool_would(step, compile_plan):
    result = compile_plan(
        [
            step(
                "a",
                tool=None,
                args=None,
                tools_allowed=["file_read", "shell", "http_request"],
                rollback_hint="undo what the agent reports it changed",
            )
        ],
        requires_approval_before=["shell", "http"],
    )

    assert result.graph is not None
    node = result.graph.nodes["a"]
    assert node.binding is None
    assert [tool.name for tool in node.allowed_tools] == ["file_read", "shell", "http_request"]
    assert node.approval_reasons == (
        "plan requires approval before scope 'shell'",
        "plan requires approval before scope 'http'",
        # an agent may make any call its tools allow: an HTTP POST is among them
        "external side effects always need a person's approval",
    )
    assert [d.code for d in result.diagnostics] == ["approval_required"]


def test_an_outbound_call_waits_for_a_person_whatever_the_policy_says(step, compile_plan):
    post = {"method": "POST", "url": "https://api.example.com/orders", "body": {"id": 1}}
    get = {"method": "GET", "url": "https://api.example.com/orders"}

    result = compile_plan(
        [
            step("read", tool="http_request", args=get),
            step("send", "read", tool="http_request", args=post),
        ]
    )

    assert result.graph is not None
    assert result.graph.nodes["read"].approval_reasons == ()
    assert result.graph.nodes["send"].approval_reasons == (
        "external side effects always need a person's approval",
    )


def test_repeating_a_performed_non_idempotent_call_is_warned(step, compile_plan):
    args = {"argv": ["make", "release"]}
    performed = [PerformedSideEffect("shell", "release_v1", sha256_of(args))]

    result = compile_plan([step("release", tool="shell", args=args)], performed=performed)

    assert found(result, "repeats_side_effect") == [
        {
            "code": "repeats_side_effect",
            "severity": "warning",
            "message": "step 'release' would repeat the write side effect of 'shell' with the "
            "same arguments, already performed by step 'release_v1'",
            "nodes": ["release"],
            "edges": [],
        }
    ]
    assert result.graph is not None


def test_a_call_with_other_arguments_or_a_harmless_effect_is_no_repeat(step, compile_plan):
    get = {"method": "GET", "url": "https://example.com/rates"}
    write = {"path": "report.md", "content": "# Report"}
    performed = [
        PerformedSideEffect("shell", "s", sha256_of({"argv": ["make", "release"]})),
        PerformedSideEffect("http_request", "h", sha256_of(get)),
        PerformedSideEffect("file_write", "w", sha256_of(write)),
    ]

    result = compile_plan(
        [
            step("release", tool="shell", args={"argv": ["make", "release", "--dry-run"]}),
            step("rates", tool="http_request", args=get),
            step("write", "release", "rates", tool="file_write", args=write),
        ],
        performed=performed,
    )

    assert found(result, "repeats_side_effect") == []


def test_a_performed_side_effect_round_trips_through_plain_data():
    effect = PerformedSideEffect("shell", "release", "ab" * 32)

    assert effect.to_data() == {"tool": "shell", "step": "release", "args_hash": "ab" * 32}
    assert PerformedSideEffect.from_data(effect.to_data()) == effect
