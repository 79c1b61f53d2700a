import json

from forge.plan import (
    Budget,
    DoneWhen,
    FieldChange,
    PlanDiff,
    PlanDocument,
    Step,
    StepChange,
    diff_plans,
)

OLD = PlanDocument(
    goal="Report on suppliers",
    deliverable="publish",
    risk_level="low",
    budget=Budget(max_steps=10),
    steps=(
        Step(id="inspect", description="Read contracts", tool="sql_read",
             args={"query": "select 1"}),
        Step(id="score", description="Score risks", depends_on=("inspect",)),
        Step(id="email", description="Email the draft", depends_on=("score",)),
        Step(id="publish", description="Publish", depends_on=("score",)),
    ),
)  # fmt: skip
NEW = PlanDocument(
    goal="Report on suppliers",
    deliverable="publish",
    risk_level="high",
    requires_approval_before=("external_email",),
    budget=Budget(max_steps=10, max_cost=2.5),
    steps=(
        Step(id="inspect", description="Read contracts", tool="sql_read",
             args={"query": "select 2"}, timeout_s=30),
        Step(id="fetch", description="Fetch ratings"),
        Step(id="score", description="Score risks", depends_on=("inspect", "fetch"),
             done_when=DoneWhen("scored", checks=("length(scores) > `0`",))),
        Step(id="publish", description="Publish", depends_on=("score",)),
    ),
)  # fmt: skip


def test_the_diff_lists_added_removed_and_changed_steps_and_edges_exactly():
    diff = diff_plans(OLD, NEW)

    assert diff == PlanDiff(
        added_steps=("fetch",),
        removed_steps=("email",),
        changed_steps=(
            StepChange(
                "inspect",
                (
                    FieldChange("args", {"query": "select 1"}, {"query": "select 2"}),
                    FieldChange("timeout_s", None, 30),
                ),
            ),
            StepChange(
                "score",
                (
                    FieldChange("depends_on", ["inspect"], ["inspect", "fetch"]),
                    FieldChange(
                        "done_when",
                        None,
                        {
                            "description": "scored",
                            "required_keys": [],
                            "checks": ["length(scores) > `0`"],
                        },
                    ),  # fmt: skip
                ),
            ),
        ),
        added_edges=(("fetch", "score"),),
        removed_edges=(("score", "email"),),
        plan_changes=(
            FieldChange("risk_level", "low", "high"),
            FieldChange("requires_approval_before", [], ["external_email"]),
            FieldChange(
                "budget",
                {"max_steps": 10, "max_tokens": None, "max_cost": None},
                {"max_steps": 10, "max_tokens": None, "max_cost": 2.5},
            ),
        ),
    )
    assert diff.changed_steps[1].fields == ("depends_on", "done_when")
    assert diff.is_empty is False


def test_the_diff_as_data_is_plain_json():
    data = diff_plans(OLD, NEW).to_data()

    assert json.loads(json.dumps(data)) == data
    assert data["added_edges"] == [["fetch", "score"]]
    assert data["removed_edges"] == [["score", "email"]]
    assert data["changed_steps"][0] == {
        "id": "inspect",
        "changes": [
            {"field": "args", "before": {"query": "select 1"}, "after": {"query": "select 2"},
             "lines": ["args.query: select 1 → select 2"]},
            {"field": "timeout_s", "before": None, "after": 30, "lines": ["timeout_s: — → 30"]},
        ],
    }  # fmt: skip
    assert data["plan_changes"][0] == {
        "field": "risk_level", "before": "low", "after": "high", "lines": ["risk_level: low → high"]
    }  # fmt: skip


def test_a_plan_compared_with_itself_has_an_empty_diff():
    diff = diff_plans(NEW, NEW)

    assert diff.is_empty is True
    assert diff.to_data() == {
        "added_steps": [], "removed_steps": [], "changed_steps": [], "added_edges": [],
        "removed_edges": [], "plan_changes": [],
    }  # fmt: skip


def test_reversing_a_diff_swaps_added_and_removed():
    forward, backward = diff_plans(OLD, NEW), diff_plans(NEW, OLD)

    assert (backward.added_steps, backward.removed_steps) == (("email",), ("fetch",))
    assert (backward.added_edges, backward.removed_edges) == (
        forward.removed_edges,
        forward.added_edges,
    )


def test_a_goal_and_deliverable_change_are_plan_changes():
    new = PlanDocument(goal="Other", deliverable="score", steps=OLD.steps, budget=OLD.budget)

    diff = diff_plans(OLD, new)

    assert diff.plan_changes == (
        FieldChange("goal", "Report on suppliers", "Other"),
        FieldChange("deliverable", "publish", "score"),
    )
    assert diff.added_steps == diff.removed_steps == diff.changed_steps == ()
