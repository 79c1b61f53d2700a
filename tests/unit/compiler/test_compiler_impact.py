"""The impact summary of a compiled version (issue 15, problem 1): what it will touch, ask,
cost and take, and what changed between two versions."""

from __future__ import annotations

import json
from pathlib import Path

from forge.compiler import GraphCompiler, Impact, compare_impact
from forge.compiler.impact import duration_text
from forge.plan import from_data
from forge.tools import DEFAULT_POLICY, Policy, PolicyEngine, ToolRegistry, ToolSpec
from forge.tools.builtins import BUILTIN_TOOLS
from tests.unit.compiler.conftest import make_plan, make_step

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
LEDGER_DELETE = ToolSpec(
    "ledger.delete_entry",
    "Delete an entry",
    {"type": "object"},
    "mcp.ledger",
    "delete",
    source="mcp:ledger",
)
LEDGER_LIST = ToolSpec(
    "ledger.list_entries", "List", {"type": "object"}, "mcp.ledger", "read", source="mcp:ledger"
)
POLICY = Policy(
    allow=dict.fromkeys(
        ("compute", "file_read", "file_write", "shell", "http", "mcp.ledger"), ("*",)
    ),
    require_approval=("file_write",),
)


def compile_data(data, policy=POLICY):
    registry = ToolRegistry([*BUILTIN_TOOLS, LEDGER_DELETE, LEDGER_LIST])
    return GraphCompiler(registry, PolicyEngine(policy)).compile(from_data(data))


def impact_of_steps(*steps, **fields) -> Impact:
    """The impact of ``steps`` joined by a last ``end`` step (a ``sleep`` of zero seconds:
    no side effect, a known duration), so the plan has one deliverable."""
    ids = [step["id"] for step in steps]
    end = make_step("end", *ids, tool="sleep", args={"seconds": 0}, done_when=None)
    result = compile_data(make_plan([*steps, end], **fields))
    assert result.ok, result.errors
    assert result.impact is not None
    return result.impact


def test_the_seed_003_example_reads_two_scopes_and_waits_for_nobody_but_the_approver():
    data = json.loads((EXAMPLES / "agent-step-in-chinese.json").read_text())

    result = compile_data(data, DEFAULT_POLICY)
    impact = result.impact

    assert impact is not None
    assert impact.scopes == ("database_read", "file_read")
    assert impact.side_effects == (("read", 1),)
    assert impact.agent_steps == 1
    assert (impact.hosts, impact.mcp, impact.files_written, impact.commands) == ((), (), (), ())
    assert impact.pauses == ()
    assert impact.plan_scopes == ("external_email", "database_write")
    # the seed's example says nothing of time: the summary says so rather than guess
    assert impact.duration.unknown == ("s1",)
    assert duration_text(impact.duration) == "unknown (1 step has no duration estimate)"
    assert result.to_data()["impact"] == impact.to_data()


def test_it_lists_hosts_files_commands_mcp_servers_and_who_waits():
    impact = impact_of_steps(
        make_step("get", tool="http_request", args={"method": "GET", "url": "https://a.example/x"}),
        make_step(
            "post",
            "get",
            tool="http_request",
            # built from literal text and an earlier output: the host is still known
            args={
                "method": "POST",
                "url": {
                    "$join": ["https://api.example.com/orders/", {"$from": "get", "path": "status"}]
                },
            },
            rollback_hint="cancel the order",
        ),
        make_step(
            "blind",
            "get",
            tool="http_request",
            args={"method": "GET", "url": {"$from": "get", "path": "body"}},
        ),
        make_step(
            "write",
            tool="file_write",
            args={"path": "out/report.md", "content": "x"},
            rollback_hint="delete out/report.md",
        ),  # fmt: skip
        make_step(
            "count",
            "write",
            tool="shell",
            args={"argv": ["wc", "-l", "out/report.md"]},
            rollback_hint="nothing to undo",
        ),  # fmt: skip
        make_step(
            "drop",
            tool="ledger.delete_entry",
            args={"key": "rent"},
            rollback_hint="add the entry back",
        ),  # fmt: skip
        make_step("agent", tool=None, args=None, tools_allowed=["ledger.list_entries", "echo"]),
    )

    assert impact.hosts == ("a.example", "api.example.com")
    assert impact.hosts_unknown == ("blind",)
    assert impact.files_written == ("out/report.md",)
    assert impact.commands == ("wc -l out/report.md",)
    assert [(use.server, use.tools) for use in impact.mcp] == [
        ("ledger", ("ledger.delete_entry", "ledger.list_entries"))
    ]
    assert impact.scopes == ("compute", "file_write", "http", "mcp.ledger", "shell")
    assert dict(impact.side_effects) == {
        "none": 1, "read": 3, "write": 2, "external": 1, "delete": 1,
    }  # fmt: skip
    assert impact.writes == 4
    assert [(pause.step, pause.reasons) for pause in impact.pauses] == [
        ("post", ("external side effects always need a person's approval",)),
        ("write", ("policy requires approval for scope 'file_write'",)),
        ("drop", ("delete side effects always need a person's approval",)),
    ]
    assert Impact.from_data(impact.to_data()) == impact


def test_duration_is_the_critical_path_and_says_what_is_unknown():
    impact = impact_of_steps(
        make_step("a", estimate={"seconds": 10}),
        make_step("b", "a", estimate={"seconds": 30}),
        make_step("c", "a", tool="sleep", args={"seconds": 5}, done_when=None),
        make_step("d", "b", "c", estimate={"seconds": 2}),
        make_step("e", "a"),
    )

    assert impact.duration.seconds == 42
    assert impact.duration.path == ("a", "b", "d")
    assert impact.duration.unknown == ("e",)
    assert duration_text(impact.duration) == "at least 42 s (1 step has no duration estimate)"


def test_tokens_and_cost_are_the_sums_of_the_estimates():
    impact = impact_of_steps(
        make_step("a", estimate={"tokens": 100, "cost": 0.1, "seconds": 60}),
        make_step("b", estimate={"tokens": 50, "cost": 0.2, "seconds": 65}),
        make_step("c"),
    )

    assert (impact.tokens, impact.cost, impact.estimated_steps) == (150, 0.3, 2)
    assert duration_text(impact.duration) == "at least 1 min 5 s (1 step has no duration estimate)"


def test_comparing_two_versions_says_what_the_new_one_adds():
    old = impact_of_steps(make_step("a", estimate={"seconds": 12}))
    new = impact_of_steps(
        make_step("a", estimate={"seconds": 12}),
        make_step(
            "b",
            "a",
            tool="http_request",
            args={"method": "GET", "url": "https://api.example.com/v3"},
            estimate={"seconds": 40},
        ),
    )

    assert compare_impact(old, new) == (
        "adds host 'api.example.com'",
        "adds scope 'http'",
        "read steps: 0 → 1",
        "adds 40 s to the estimated duration (12 s → 52 s)",
    )
    assert compare_impact(new, new) == ()
    assert "drops host 'api.example.com'" in compare_impact(new, old)


def test_steps_without_side_effects_are_counted_in_words():
    old = impact_of_steps(make_step("a"))
    new = impact_of_steps(make_step("a"), make_step("b", "a"))

    # impact_of_steps joins each with an `end` step of its own.
    assert compare_impact(old, new)[0] == "steps without side effects: 2 → 3"
