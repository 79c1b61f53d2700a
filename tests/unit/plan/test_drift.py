from dataclasses import replace

import msgspec

from forge.plan import Budget, from_data
from forge.plan.drift import detect_drift

PARENT = from_data(
    {
        "goal": "Publish the supplier risk report",
        "deliverable": "publish",
        "risk_level": "medium",
        "requires_approval_before": ["external_email", "file_write"],
        "budget": {"max_steps": 10, "max_cost": 2.0},
        "max_replans": 2,
        "steps": [
            {"id": "inspect", "tool": "noop"},
            {"id": "review", "tool": "noop", "depends_on": ["inspect"]},
            {"id": "publish", "tool": "noop", "depends_on": ["review"]},
        ],
    }
)


def test_a_version_that_keeps_every_constraint_has_no_drift():
    tighter = replace(PARENT, budget=Budget(max_steps=5, max_cost=1.0), max_replans=1)

    assert detect_drift(PARENT, tighter) == ()


def test_dropping_an_approval_requirement_is_drift():
    child = replace(PARENT, requires_approval_before=("file_write",))

    assert detect_drift(PARENT, child) == (
        "approval before 'external_email' is no longer required",
    )


def test_removing_a_step_the_deliverable_depended_on_is_drift():
    steps = (PARENT.steps[0], msgspec.structs.replace(PARENT.steps[2], depends_on=("inspect",)))

    assert detect_drift(PARENT, replace(PARENT, steps=steps)) == (
        "step 'review', which the deliverable depended on, was removed",
    )


def test_loosening_the_budget_the_replan_cap_or_the_risk_is_drift():
    child = replace(PARENT, budget=Budget(max_steps=20), max_replans=5, risk_level="low")

    assert detect_drift(PARENT, child) == (
        "budget max_steps loosened from 10 to 20",
        "budget max_cost loosened from 2.0 to unlimited",
        "max_replans raised from 2 to 5",
        "risk_level lowered from medium to low",
    )
