"""The dependency rules the Scheduler and forge.workflow share (forge.runtime.dependencies)."""

from forge.runtime.dependencies import preserved_steps, reset_steps, unmet_dependencies

DEPENDENTS = {"inspect": ("code", "docs"), "code": ("test",), "test": ("publish",)}


def _dependents(step_id):
    return DEPENDENTS.get(step_id, ())


def test_a_failed_or_unrun_dependency_is_unmet_and_only_success_meets_one():
    status = {"a": "succeeded", "b": "failed", "c": "running"}.get

    assert unmet_dependencies(("a", "b", "c", "d"), status) == ["b", "c", "d"]
    assert unmet_dependencies(("a",), status) == []


def test_the_reset_set_is_the_failed_step_and_its_transitive_dependents():
    assert reset_steps("code", _dependents) == {"code", "test", "publish"}
    assert reset_steps("publish", _dependents) == {"publish"}


def test_preserved_steps_are_the_succeeded_ones_outside_the_reset_set_sorted():
    statuses = [("test", "succeeded"), ("inspect", "succeeded"), ("docs", "failed")]
    statuses += [("code", "succeeded"), ("a", "pending")]

    assert preserved_steps(statuses, {"code", "test"}) == ["inspect"]
