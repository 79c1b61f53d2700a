from forge.workflow import Executor, Task, TaskGraph, TaskResult


def _boom():
    raise RuntimeError("inspect crashed")


def test_ready_lists_unrun_tasks_whose_dependencies_succeeded_sorted():
    graph = TaskGraph([Task("b"), Task("a"), Task("c", depends_on=("a", "b"))])
    executor = Executor(graph)

    assert executor.ready() == ["a", "b"]
    executor.run_ready()
    assert executor.ready() == ["c"]


def test_a_recorded_failure_is_not_a_success_so_dependents_never_become_ready():
    graph = TaskGraph(
        [
            Task("inspect", handler=_boom),
            Task("code", depends_on=("inspect",), handler=lambda: {"patched": True}),
            Task("test", depends_on=("code",), handler=lambda: {"tests": "passed"}),
        ]
    )
    executor = Executor(graph)

    executor.run_ready()

    assert "inspect" in executor.results
    assert executor.ready() == []
    assert executor.run_ready() == ()
    assert set(executor.results) == {"inspect"}


def test_run_ready_catches_a_handler_exception_into_a_failed_result():
    executor = Executor(TaskGraph([Task("inspect", handler=_boom)]))

    results = executor.run_ready()

    assert results == (
        TaskResult("inspect", "failed", output=None, error="RuntimeError: inspect crashed"),
    )
    assert executor.results["inspect"].status == "failed"


def test_run_ready_records_a_handler_output_as_succeeded():
    executor = Executor(TaskGraph([Task("code", handler=lambda: {"patched": True})]))

    assert executor.run_ready() == (TaskResult("code", "succeeded", output={"patched": True}),)


def test_run_ready_runs_each_task_once():
    calls = []
    executor = Executor(TaskGraph([Task("a", handler=lambda: calls.append("a"))]))

    executor.run_ready()
    executor.run_ready()

    assert calls == ["a"]
