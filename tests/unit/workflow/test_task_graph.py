import pytest

from forge.workflow import Task, TaskGraph


def test_topological_order_places_every_task_after_its_dependencies():
    graph = TaskGraph(
        [
            Task("test", depends_on=("code",)),
            Task("code", depends_on=("inspect",)),
            Task("inspect"),
            Task("docs", depends_on=("inspect",)),
        ]
    )

    order = graph.topological_order()

    assert isinstance(order, tuple)
    assert order == ("inspect", "code", "docs", "test")


def test_a_missing_dependency_is_rejected_at_construction():
    with pytest.raises(ValueError, match="missing"):
        TaskGraph([Task("code", depends_on=("inspect",))])


def test_a_cycle_is_rejected_at_construction():
    with pytest.raises(ValueError, match="cycle"):
        TaskGraph([Task("a", depends_on=("b",)), Task("b", depends_on=("a",))])


def test_a_self_dependency_is_a_cycle():
    with pytest.raises(ValueError, match="cycle"):
        TaskGraph([Task("a", depends_on=("a",))])


def test_tasks_stuck_behind_a_cycle_are_a_deadlock_not_a_completion():
    # 'free' can run, but 'a' and 'b' wait on each other: a partial order would hide that.
    with pytest.raises(ValueError) as caught:
        TaskGraph([Task("free"), Task("a", depends_on=("b", "free")), Task("b", depends_on=("a",))])

    assert caught.value.node_ids == ("a", "b")


def test_a_duplicate_task_id_is_rejected():
    with pytest.raises(ValueError, match="duplicate"):
        TaskGraph([Task("a"), Task("a")])


def test_depends_on_is_kept_as_a_tuple_whatever_iterable_is_given():
    assert Task("b", depends_on=["a"]).depends_on == ("a",)


def test_an_empty_graph_has_an_empty_order():
    assert TaskGraph([]).topological_order() == ()
