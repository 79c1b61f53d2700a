"""Resume on a replan under approval rules (SPEC section 10): a read-only replan that the
policy would continue on its own approval needs people when it matches a rule with a
team or more than one approval."""

from __future__ import annotations

import pytest

from forge.errors import ForgeError
from forge.plan import from_data
from plans import services as plan_services
from plans.models import Approval, PlanVersion
from runs import services

from .runs_helpers import FAILING_STEPS, FIXED_STEPS, approved_version, drain

pytestmark = pytest.mark.django_db(transaction=True)

TWO_FOR_ECHO = """\
schema: forge.rules/v1
rules:
  - id: two
    when: {tool: [echo]}
    require: {approvals: 2}
"""


def test_a_read_only_replan_matching_a_two_person_rule_never_passes_by_policy(
    read_only_replans, approval_rules, author, approver, make_user, operator
):
    approval_rules(TWO_FOR_ECHO)
    dan = make_user("dan", "approver")
    v1 = approved_version(author, approver, FAILING_STEPS, goal="Score the supplier")
    plan_services.approve(v1, dan)
    run = services.start_run(PlanVersion.objects.get(pk=v1.pk), operator)
    drain()
    services.create_replan(
        run, author, from_data({"goal": "Score the supplier", "steps": FIXED_STEPS})
    )
    v2 = PlanVersion.objects.get(plan=v1.plan, number=2)

    with pytest.raises(ForgeError) as refused:
        services.resume_run(run, v2, operator)

    assert "it matches approval rule 'two', which needs 2 people" in refused.value.message
    assert not Approval.objects.filter(version=v2, by_policy=True).exists()

    plan_services.approve(v2, approver)
    with pytest.raises(ForgeError) as half:  # one person of the two: it still waits
        services.resume_run(run, PlanVersion.objects.get(pk=v2.pk), operator)
    assert (half.value.code, half.value.message) == (
        "rules_unsatisfied",
        "version 2 is not approved under the approval rules: rule two needs 1 more person",
    )

    plan_services.approve(v2, dan)
    services.resume_run(run, PlanVersion.objects.get(pk=v2.pk), operator)
    drain()
    run.refresh_from_db()
    assert run.status == "succeeded"
