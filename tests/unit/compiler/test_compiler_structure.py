"""Ids and dependencies: duplicates, dangling dependencies, cycles and the order."""

from __future__ import annotations

from typing import Any

from forge.compiler import MAX_CYCLES_PER_COMPONENT, CompileResult


def found(result: CompileResult, code: str) -> list[dict[str, Any]]:
    return [d.to_data() for d in result.diagnostics if d.code == code]


def test_a_three_step_cycle_is_reported_with_its_nodes_and_edges_in_order(step, compile_plan):
    result = compile_plan([step("a", "c"), step("b", "a"), step("c", "b")])

    assert found(result, "cycle") == [
        {
            "code": "cycle",
            "severity": "error",
            "message": "dependency cycle: a -> b -> c -> a",
            "nodes": ["a", "b", "c"],
            "edges": [["a", "b"], ["b", "c"], ["c", "a"]],
        }
    ]
    assert result.graph is None


def test_a_cycle_starts_at_its_earliest_step_in_the_document(step, compile_plan):
    result = compile_plan([step("c", "b"), step("a", "c"), step("b", "a")])

    [cycle] = found(result, "cycle")
    assert cycle["nodes"] == ["c", "a", "b"]
    assert cycle["edges"] == [["c", "a"], ["a", "b"], ["b", "c"]]


def test_each_independent_cycle_is_reported_on_its_own(step, compile_plan):
    result = compile_plan(
        [
            step("a", "b"),
            step("b", "a"),
            step("s", "s"),
            step("x", "z"),
            step("y", "x"),
            step("z", "y"),
            step("report", "b", "s", "z"),
        ]
    )

    assert [(d["nodes"], d["edges"]) for d in found(result, "cycle")] == [
        (["a", "b"], [["a", "b"], ["b", "a"]]),
        (["s"], [["s", "s"]]),
        (["x", "y", "z"], [["x", "y"], ["y", "z"], ["z", "x"]]),
    ]


def test_a_step_that_depends_on_itself_is_a_cycle_of_one(step, compile_plan):
    result = compile_plan([step("a", "a")])

    assert found(result, "cycle") == [
        {
            "code": "cycle",
            "severity": "error",
            "message": "dependency cycle: a -> a",
            "nodes": ["a"],
            "edges": [["a", "a"]],
        }
    ]


def test_steps_downstream_of_a_cycle_are_not_reported_as_part_of_it(step, compile_plan):
    result = compile_plan([step("a", "b"), step("b", "a"), step("c", "b")])

    assert [d["nodes"] for d in found(result, "cycle")] == [["a", "b"]]


def test_a_dense_tangle_reports_a_bounded_number_of_cycles(step, compile_plan):
    # Every step depends on every other: far more simple cycles than anyone could read.
    ids = [f"s{index:02}" for index in range(12)]
    result = compile_plan([step(i, *(other for other in ids if other != i)) for i in ids])

    cycles = found(result, "cycle")
    assert len(cycles) == MAX_CYCLES_PER_COMPONENT
    for cycle in cycles:
        nodes = cycle["nodes"]
        assert len(set(nodes)) == len(nodes)
        assert cycle["edges"] == [
            list(edge) for edge in zip(nodes, nodes[1:] + nodes[:1], strict=True)
        ]
        assert "one of the cycles among 12 steps" in cycle["message"]


def test_a_dependency_on_a_missing_step_draws_a_dangling_edge(step, compile_plan):
    result = compile_plan([step("inspect"), step("score", "inspect", "contracts")])

    assert found(result, "missing_dependency") == [
        {
            "code": "missing_dependency",
            "severity": "error",
            "message": "step 'score' depends on 'contracts', which is not a step of this plan",
            "nodes": ["score", "contracts"],
            "edges": [["contracts", "score"]],
        }
    ]
    assert result.graph is None


def test_a_shared_id_is_reported_once_with_the_number_of_steps_using_it(step, compile_plan):
    result = compile_plan([step("a"), step("b", "a"), step("a"), step("a")])

    assert found(result, "duplicate_id") == [
        {
            "code": "duplicate_id",
            "severity": "error",
            "message": "step id 'a' is used by 3 steps",
            "nodes": ["a"],
            "edges": [],
        }
    ]


def test_a_later_step_reusing_an_id_still_has_its_dependencies_checked(step, compile_plan):
    result = compile_plan([step("a"), step("b", "a"), step("a", "ghost")])

    assert [d["nodes"] for d in found(result, "missing_dependency")] == [["a", "ghost"]]


def test_a_dependency_named_twice_counts_once(step, compile_plan):
    result = compile_plan([step("a"), step("b", "a", "a")])

    assert result.ok
    assert result.graph is not None
    assert result.graph.nodes["b"].depends_on == ("a",)


def test_steps_written_out_of_order_compile_in_dependency_order(step, compile_plan):
    result = compile_plan(
        [step("publish", "score"), step("score", "fetch", "rules"), step("fetch"), step("rules")]
    )

    assert result.graph is not None
    assert result.graph.order == ("fetch", "rules", "score", "publish")
    assert list(result.graph.nodes) == ["fetch", "rules", "score", "publish"]


def test_steps_written_in_dependency_order_keep_the_document_order(step, compile_plan):
    result = compile_plan([step("b"), step("a"), step("c", "a", "b")])

    assert result.graph is not None
    assert result.graph.order == ("b", "a", "c")
