"""forge.workflow keeps the seed's names, but each rule is the runtime's or the compiler's."""

import pytest

import forge.workflow
from forge.compiler.structure import analyse_structure
from forge.plan import Step
from forge.runtime import budget, contracts
from forge.workflow import Task, TaskGraph


def test_the_budget_and_the_result_contracts_are_the_runtime_s_own():
    assert forge.workflow.WorkflowBudget is budget.WorkflowBudget
    assert forge.workflow.ResultContract is contracts.ResultContract
    assert forge.workflow.ValidationResult is contracts.ValidationResult
    assert forge.workflow.validate_output is contracts.validate_output


def test_a_task_graph_is_ordered_as_the_compiler_orders_the_same_steps_by_id():
    tasks = [Task("z"), Task("b", depends_on=("z",)), Task("a", depends_on=("b",)), Task("c")]
    steps = sorted((Step(t.id, depends_on=t.depends_on) for t in tasks), key=lambda s: s.id)

    assert TaskGraph(tasks).topological_order() == analyse_structure(steps).order
    assert TaskGraph(tasks).topological_order() == ("c", "z", "b", "a")


def test_tasks_behind_a_cycle_are_named_with_it():
    with pytest.raises(ValueError, match="cycle") as caught:
        TaskGraph([Task("a", depends_on=("b",)), Task("b", depends_on=("a",)), Task("c", ("a",))])

    assert caught.value.node_ids == ("a", "b", "c")
