from forge.workflow import (
    ResultContract,
    Task,
    TaskGraph,
    WorkflowBudget,
    WorkflowRun,
    run_workflow,
)


class RecordingBudget(WorkflowBudget):
    """Notes every consumption, so tests can see it happen before the wave runs."""

    def __init__(self, log, **limits):
        super().__init__(**limits)
        self.log = log

    def consume(self, steps, tokens, cost):
        super().consume(steps, tokens, cost)
        self.log.append(("consume", steps, tokens, cost))


def _handler(log, name, output):
    def run():
        log.append(("run", name))
        return output

    return run


def test_a_workflow_whose_outputs_are_valid_succeeds_with_every_task_completed():
    graph = TaskGraph(
        [
            Task("inspect", handler=lambda: {"ok": True}),
            Task("code", depends_on=("inspect",), handler=lambda: {"ok": True}),
        ]
    )

    run = run_workflow(graph, WorkflowBudget(10, 100, 1.0))

    assert run == WorkflowRun("succeeded", ("inspect", "code"), ())


def test_budget_is_consumed_before_each_run_ready():
    log = []
    graph = TaskGraph(
        [
            Task("inspect", handler=_handler(log, "inspect", {}), tokens=10, cost=0.1),
            Task("docs", depends_on=("inspect",), handler=_handler(log, "docs", {}), tokens=5),
            Task("code", depends_on=("inspect",), handler=_handler(log, "code", {}), tokens=7),
        ]
    )
    budget = RecordingBudget(log, max_steps=10, max_tokens=100, max_cost=1.0)

    run_workflow(graph, budget)

    assert log == [
        ("consume", 1, 10, 0.1),
        ("run", "inspect"),
        ("consume", 2, 12, 0.0),
        ("run", "code"),
        ("run", "docs"),
    ]


def test_an_invalid_output_stops_at_once_with_needs_replan_and_the_reset_set():
    log = []
    graph = TaskGraph(
        [
            Task("inspect", handler=_handler(log, "inspect", {"ok": True})),
            Task("code", depends_on=("inspect",), handler=_handler(log, "code", {"ok": False})),
            Task("verify", depends_on=("code",), handler=_handler(log, "verify", {"ok": True})),
        ]
    )
    contracts = {"code": ResultContract(required_keys=("ok",), checks=(lambda v: v["ok"] is True,))}

    run = run_workflow(graph, WorkflowBudget(10, 100, 1.0), contracts)

    assert run == WorkflowRun("needs_replan", completed=("inspect",), reset=("code", "verify"))
    assert ("run", "verify") not in log


def test_a_handler_failure_stops_at_once_with_needs_replan():
    def crash():
        raise RuntimeError("boom")

    graph = TaskGraph(
        [
            Task("inspect", handler=lambda: {}),
            Task("code", depends_on=("inspect",), handler=crash),
            Task("test", depends_on=("code",), handler=lambda: {}),
            Task("publish", depends_on=("test",), handler=lambda: {}),
        ]
    )

    run = run_workflow(graph, WorkflowBudget(10, 100, 1.0))

    assert run == WorkflowRun("needs_replan", ("inspect",), ("code", "publish", "test"))


def test_a_budget_that_refuses_a_wave_triggers_a_replan_with_nothing_of_that_wave_run():
    """Seed 001: when ``consume`` refuses, the refusal triggers a replan (not an end):
    the refused wave and everything below it start over, what finished is kept."""
    log = []
    graph = TaskGraph(
        [
            Task("a", handler=_handler(log, "a", {})),
            Task("b", depends_on=("a",), handler=_handler(log, "b", {})),
            Task("c", depends_on=("b",), handler=_handler(log, "c", {})),
        ]
    )
    budget = WorkflowBudget(max_steps=1, max_tokens=100, max_cost=1.0)

    run = run_workflow(graph, budget)

    assert run == WorkflowRun("needs_replan", ("a",), ("b", "c"))
    assert log == [("run", "a")]
    assert (budget.used_steps, budget.used_tokens, budget.used_cost) == (1, 0, 0.0)


def test_a_refused_wave_resets_every_task_of_the_wave_and_their_descendants():
    log = []
    graph = TaskGraph(
        [
            Task("a", handler=_handler(log, "a", {})),
            Task("b", depends_on=("a",), handler=_handler(log, "b", {}), tokens=60),
            Task("c", depends_on=("a",), handler=_handler(log, "c", {}), tokens=60),
            Task("d", depends_on=("c",), handler=_handler(log, "d", {})),
        ]
    )

    run = run_workflow(graph, WorkflowBudget(max_steps=10, max_tokens=100, max_cost=1.0))

    assert run == WorkflowRun("needs_replan", ("a",), ("b", "c", "d"))
    assert log == [("run", "a")]
