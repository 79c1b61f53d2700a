import pytest

from forge.workflow import (
    Executor,
    ReplanDecision,
    Task,
    TaskGraph,
    TaskResult,
    affected_subgraph,
    replan,
)


def _delivery_graph() -> TaskGraph:
    return TaskGraph(
        [
            Task("inspect"),
            Task("code", depends_on=("inspect",)),
            Task("test", depends_on=("code",)),
            Task("publish", depends_on=("test",)),
            Task("docs", depends_on=("inspect",)),
        ]
    )


def test_when_code_fails_code_test_and_publish_are_reset_and_docs_is_preserved():
    graph = _delivery_graph()
    results = {
        "inspect": TaskResult("inspect", "succeeded", {"files": 3}),
        "docs": TaskResult("docs", "succeeded", {"pages": 1}),
        "code": TaskResult("code", "failed", error="compile error"),
    }

    decision = replan(graph, results, "code")

    assert decision == ReplanDecision(
        reset_task_ids=("code", "publish", "test"),
        preserved_task_ids=("docs", "inspect"),
    )


def test_the_affected_subgraph_holds_transitive_descendants_not_only_children():
    assert affected_subgraph(_delivery_graph(), "code") == ("code", "publish", "test")
    assert affected_subgraph(_delivery_graph(), "inspect") == (
        "code",
        "docs",
        "inspect",
        "publish",
        "test",
    )


def test_replanning_executes_nothing_and_mutates_nothing():
    calls = []
    graph = TaskGraph([Task("a", handler=lambda: calls.append("a")), Task("b", depends_on=("a",))])
    results = {"a": TaskResult("a", "failed", error="x")}
    snapshot = dict(results)

    replan(graph, results, "a")

    assert calls == []
    assert results == snapshot


def test_failed_results_outside_the_reset_set_are_not_preserved():
    graph = TaskGraph([Task("a"), Task("b")])
    results = {"a": TaskResult("a", "failed", error="x"), "b": TaskResult("b", "failed")}

    assert replan(graph, results, "a") == ReplanDecision(("a",), ())


def test_an_unknown_failed_task_is_rejected():
    with pytest.raises(ValueError, match="missing"):
        affected_subgraph(_delivery_graph(), "deploy")


def test_the_replan_of_a_real_executor_run_keeps_what_succeeded():
    graph = TaskGraph(
        [
            Task("inspect", handler=lambda: {"ok": True}),
            Task("code", depends_on=("inspect",), handler=lambda: 1 / 0),
            Task("docs", depends_on=("inspect",), handler=lambda: {"ok": True}),
            Task("test", depends_on=("code",)),
        ]
    )
    executor = Executor(graph)
    executor.run_ready()
    executor.run_ready()

    assert replan(graph, executor.results, "code") == ReplanDecision(
        ("code", "test"), ("docs", "inspect")
    )
