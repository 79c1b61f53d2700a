"""The ExecutableGraph a clean plan compiles to, and what never gets one."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from typing import Any

from forge.compiler import GraphCompiler
from forge.plan import canonical_json, content_hash, from_data
from forge.tools import DEFAULT_POLICY, PolicyEngine, builtin_registry

FETCH_ARGS = {"path": "contracts/suppliers.csv"}
PUBLISH_ARGS = {"method": "POST", "url": "https://reports.example.com/", "body": {"id": 7}}
# Seed 003 section 9: an outbound call always waits for a person, whatever the policy.
EXTERNAL = "external side effects always need a person's approval"


def sha256_of(args: dict[str, Any]) -> str:
    return hashlib.sha256(canonical_json(args).encode()).hexdigest()


def report_steps(step) -> list[dict[str, Any]]:
    return [
        step("fetch", tool="file_read", args=FETCH_ARGS, timeout_s=30),
        step("summarise", "fetch", tool=None, args=None, tools_allowed=["file_read", "echo"]),
        step(
            "publish",
            "summarise",
            tool="http_request",
            args=PUBLISH_ARGS,
            rollback_hint="withdraw report 7 at reports.example.com",
        ),
    ]


def test_a_clean_plan_compiles_to_nodes_with_resolved_bindings(step, compile_plan):
    result = compile_plan(report_steps(step))

    assert result.ok
    assert [(d.code, d.nodes) for d in result.diagnostics] == [("approval_required", ("publish",))]
    graph = result.graph
    assert graph is not None
    assert graph.order == ("fetch", "summarise", "publish")
    assert graph.deliverable == "publish"
    fetch = graph.nodes["fetch"].binding
    assert fetch is not None
    assert (fetch.tool.name, dict(fetch.args), fetch.timeout_s) == ("file_read", FETCH_ARGS, 30)
    assert (fetch.args_hash, fetch.side_effect) == (sha256_of(FETCH_ARGS), "read")
    publish = graph.nodes["publish"].binding
    assert publish is not None
    assert (publish.tool.name, publish.timeout_s, publish.side_effect) == (
        "http_request",
        60.0,
        "external",
    )
    assert publish.args_hash == sha256_of(PUBLISH_ARGS)
    assert publish.approval_reasons == (EXTERNAL,)
    assert not publish.repeatable


def test_an_agent_step_compiles_to_a_node_with_allowed_tools_and_no_binding(step, compile_plan):
    graph = compile_plan(report_steps(step)).graph

    assert graph is not None
    summarise = graph.nodes["summarise"]
    assert summarise.binding is None
    assert [tool.name for tool in summarise.allowed_tools] == ["file_read", "echo"]
    assert summarise.depends_on == ("fetch",)


def test_a_graph_knows_each_nodes_direct_dependents(step, compile_plan):
    graph = compile_plan([step("a"), step("b", "a"), step("c", "a"), step("d", "b", "c")]).graph

    assert graph is not None
    assert [graph.dependents(node) for node in graph.order] == [("b", "c"), ("d",), ("d",), ()]


def test_a_graph_as_data_lists_nodes_edges_order_and_hash(step, compile_plan):
    result = compile_plan(report_steps(step))
    graph = result.graph
    assert graph is not None

    assert graph.to_data() == {
        "content_hash": content_hash(graph.document),
        "deliverable": "publish",
        "order": ["fetch", "summarise", "publish"],
        "nodes": [
            {
                "id": "fetch",
                "tool": "file_read",
                "allowed_tools": [],
                "args_hash": sha256_of(FETCH_ARGS),
                "side_effect": "read",
                "timeout_s": 30,
                "approval_reasons": [],
                "depends_on": [],
                "fingerprint": graph.nodes["fetch"].fingerprint,
            },
            {
                "id": "summarise",
                "tool": None,
                "allowed_tools": ["file_read", "echo"],
                "args_hash": None,
                "side_effect": None,
                "timeout_s": None,
                "approval_reasons": [],
                "depends_on": ["fetch"],
                "fingerprint": graph.nodes["summarise"].fingerprint,
            },
            {
                "id": "publish",
                "tool": "http_request",
                "allowed_tools": [],
                "args_hash": sha256_of(PUBLISH_ARGS),
                "side_effect": "external",
                "timeout_s": 60.0,
                "approval_reasons": [EXTERNAL],
                "depends_on": ["summarise"],
                "fingerprint": graph.nodes["publish"].fingerprint,
            },
        ],
        "edges": [["fetch", "summarise"], ["summarise", "publish"]],
        "data_edges": [],
    }
    assert result.to_data() == {
        "ok": True,
        "diagnostics": [d.to_data() for d in result.diagnostics],
        "graph": graph.to_data(),
        "impact": result.impact.to_data() if result.impact else None,
    }
    assert result.impact is not None and result.impact.hosts == ("reports.example.com",)


def test_a_plan_with_an_error_gets_diagnostics_and_no_graph(step, compile_plan):
    result = compile_plan(
        [step("a", description="do it"), step("b", "a", tool="teleport", args={})]
    )

    assert not result.ok
    assert result.graph is None
    assert [d.code for d in result.errors] == ["unknown_tool"]
    assert [d.code for d in result.warnings] == ["vague_step"]
    assert result.to_data()["graph"] is None
    assert result.to_data()["ok"] is False


def test_a_plan_with_only_warnings_compiles(step, compile_plan):
    result = compile_plan([step("a", description="do it")])

    assert result.ok
    assert result.graph is not None
    assert [d.code for d in result.warnings] == ["vague_step"]


def test_compiling_the_same_document_twice_gives_equal_results(step, compile_plan):
    steps = [*report_steps(step), step("extra", description="execute task")]

    first, second = (
        compile_plan(steps, deliverable="publish"),
        compile_plan(steps, deliverable="publish"),
    )

    assert [d.code for d in first.diagnostics] == [
        "unreachable_deliverable",
        "vague_step",
        "approval_required",
    ]
    assert first == second
    assert first.to_data() == second.to_data()
    assert first.graph is not None and second.graph is not None
    assert first.graph.content_hash == second.graph.content_hash


def test_cycle_reports_do_not_depend_on_the_string_hash_seed(step):
    # networkx keeps components in sets; feeding it positions, not ids, keeps the order.
    ids = [f"n{index}" for index in range(8)]
    steps = [step(i, *(other for other in ids if other != i)) for i in ids]
    steps += [step("x", "z"), step("y", "x"), step("z", "y")]
    script = (
        "import json, sys\n"
        "from forge.compiler import GraphCompiler\n"
        "from forge.plan import from_data\n"
        "from forge.tools import DEFAULT_POLICY, PolicyEngine, builtin_registry\n"
        "compiler = GraphCompiler(builtin_registry(), PolicyEngine(DEFAULT_POLICY))\n"
        "result = compiler.compile(from_data(json.load(sys.stdin)))\n"
        "print(json.dumps(result.to_data()))\n"
    )
    plan = json.dumps({"goal": "Tangle", "steps": steps})

    def compile_with_seed(seed: str) -> dict[str, Any]:
        env = {**os.environ, "PYTHONHASHSEED": seed}
        done = subprocess.run(
            [sys.executable, "-c", script], input=plan, env=env, capture_output=True,
            text=True, check=True,
        )  # fmt: skip
        return json.loads(done.stdout)

    assert compile_with_seed("1") == compile_with_seed("2")


def test_the_graph_content_hash_is_the_documents(step):
    document = from_data({"goal": "Report", "steps": report_steps(step)})

    graph = GraphCompiler(builtin_registry(), PolicyEngine(DEFAULT_POLICY)).compile(document).graph

    assert graph is not None
    assert graph.content_hash == content_hash(document)


def test_a_fingerprint_ignores_wording_and_order_but_not_what_runs(step, compile_plan):
    def fingerprint(**changes: Any) -> str:
        steps = [step("a"), step("b"), step("c", "a", "b", **changes)]
        graph = compile_plan(steps, deliverable="c").graph
        assert graph is not None
        return graph.nodes["c"].fingerprint

    original = fingerprint()

    assert fingerprint(description="Write the closing section from both inputs") == original
    assert fingerprint(depends_on=["b", "a"]) == original
    assert fingerprint(args={"section": "other"}) != original
    assert fingerprint(depends_on=["a"]) != original
    assert fingerprint(tool="noop", args={}) != original
    assert fingerprint(done_when={"checks": ["section"]}) != original
