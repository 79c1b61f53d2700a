"""What a policy's ``require_approval`` and a plan's ``requires_approval_before`` may name:
a scope (``mcp.<server>``, a whole MCP server) or one tool. Naming adds approval reasons;
nothing named removes the policy's or the forced ones."""

from __future__ import annotations

import mcp.types as mcp_types
import pytest

from forge.compiler import GraphCompiler
from forge.plan import from_data
from forge.runners.mcp import mcp_tool_spec
from forge.tools import Policy, PolicyEngine, ToolRegistry, builtin_registry

READ_ONLY = mcp_types.ToolAnnotations(read_only_hint=True)
NOW = mcp_tool_spec(
    "time", mcp_types.Tool(name="get_current_time", input_schema={}, annotations=READ_ONLY)
)
CONVERT = mcp_tool_spec(
    "time", mcp_types.Tool(name="convert_time", input_schema={}, annotations=READ_ONLY)
)
DROP = mcp_tool_spec("db", mcp_types.Tool(name="drop_table", input_schema={}))  # no hints


def reasons(policy: Policy, tool, plan: tuple[str, ...] = ()) -> tuple[str, ...]:
    decision = PolicyEngine(policy).decide(tool, plan)
    assert decision.allowed
    return decision.approval_reasons


def test_a_policy_may_name_one_mcp_tool_and_its_neighbours_do_not_wait():
    policy = Policy.allowing(["mcp.time"], require_approval=["time.get_current_time"])

    assert reasons(policy, NOW) == ("policy requires approval for tool 'time.get_current_time'",)
    assert reasons(policy, CONVERT) == ()


def test_naming_the_server_s_scope_still_covers_every_tool_of_it():
    policy = Policy.allowing(["mcp.time"], require_approval=["mcp.time"])

    assert reasons(policy, NOW) == ("policy requires approval for scope 'mcp.time'",)
    assert reasons(policy, CONVERT) == ("policy requires approval for scope 'mcp.time'",)


def test_a_plan_may_name_one_tool_and_adds_to_what_the_policy_says():
    policy = Policy.allowing(["mcp.time"], require_approval=["mcp.time"])

    assert reasons(policy, NOW, ("time.get_current_time",)) == (
        "policy requires approval for scope 'mcp.time'",
        "plan requires approval before tool 'time.get_current_time'",
    )


def test_naming_a_built_in_tool_makes_it_wait():
    echo = builtin_registry().get("echo")

    assert reasons(Policy.allowing(["compute"]), echo, ("echo",)) == (
        "plan requires approval before tool 'echo'",
    )


def test_a_tool_whose_name_is_its_scope_is_not_counted_twice():
    shell = builtin_registry().get("shell")

    assert reasons(Policy.allowing(["shell"], require_approval=["shell"]), shell)[0] == (
        "policy requires approval for scope 'shell'"
    )
    assert "policy requires approval for tool 'shell'" not in reasons(
        Policy.allowing(["shell"], require_approval=["shell"]), shell
    )


@pytest.mark.parametrize("named", [(), ("db.drop_table",), ("mcp.db",), ("db.other",)])
def test_nothing_a_plan_names_removes_a_forced_approval(named):
    policy = Policy(allow={"mcp.db": ("*",)}, approve_high_risk=False)

    assert "delete side effects always need a person's approval" in reasons(policy, DROP, named)


def test_the_compiler_reports_the_tool_named_by_the_plan_as_why_a_step_waits():
    registry = ToolRegistry([NOW, CONVERT])
    compiler = GraphCompiler(registry, PolicyEngine(Policy.allowing(["mcp.time"])))
    document = from_data(
        {
            "goal": "Tell the time in Paris and Tokyo",
            "requires_approval_before": ["time.get_current_time"],
            "steps": [
                {"id": "now", "description": "Read the time in Paris",
                 "tool": "time.get_current_time", "args": {}},
                {"id": "tokyo", "description": "Convert it for Tokyo",
                 "tool": "time.convert_time", "args": {}, "depends_on": ["now"]},
            ],
        }
    )  # fmt: skip

    result = compiler.compile(document)

    waiting = [d for d in result.diagnostics if d.code == "approval_required"]
    assert [(d.nodes, d.message) for d in waiting] == [
        (
            ("now",),
            "step 'now' will wait for approval: plan requires approval before tool "
            "'time.get_current_time'",
        )
    ]
    assert result.graph.nodes["tokyo"].binding.approval_reasons == ()
