"""The seed's three terminal-deliverable cases, under their own names."""

import pytest

from forge.workflow import Task, TaskGraph, create_plan


def _delivery_graph() -> TaskGraph:
    return TaskGraph(
        [
            Task("inspect"),
            Task("code", depends_on=("inspect",)),
            Task("verify", depends_on=("code",)),
        ]
    )


def test_plan_binds_goal_to_a_terminal_deliverable():
    plan = create_plan("ship the fix", _delivery_graph(), "verify")

    assert plan.goal == "ship the fix"
    assert plan.deliverable_task_id == "verify"
    assert plan.graph.topological_order() == ("inspect", "code", "verify")


def test_nonterminal_deliverable_is_rejected():
    with pytest.raises(ValueError, match="terminal"):
        create_plan("ship the fix", _delivery_graph(), "code")


def test_unknown_deliverable_is_rejected():
    with pytest.raises(ValueError, match="missing"):
        create_plan("ship the fix", _delivery_graph(), "deploy")
