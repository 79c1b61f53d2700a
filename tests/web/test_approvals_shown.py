"""Who approved a version, and what: the version page and a run's replan view name the
reviewer (a username, or the policy for a read-only replan) and the content hash the
approval binds."""

from __future__ import annotations

import pytest

from forge.plan import from_data
from plans.models import Approval, PlanVersion
from runs import services

from .runs_helpers import FAILING_STEPS, FIXED_STEPS, approved_version, drain

pytestmark = pytest.mark.django_db(transaction=True)

STEPS, FIXED = FAILING_STEPS, FIXED_STEPS


def resumed_on_the_policys_approval(author, approver, operator):
    """A run whose read-only replan v2 the policy approved when the operator resumed."""
    v1 = approved_version(author, approver, STEPS, goal="Score the supplier")
    run = services.start_run(v1, operator)
    drain()
    services.create_replan(run, author, from_data({"goal": "Score the supplier", "steps": FIXED}))
    services.resume_run(run, PlanVersion.objects.get(plan=v1.plan, number=2), operator)
    drain()
    run.refresh_from_db()
    assert run.status == "succeeded"
    return run


def test_the_version_page_names_the_approver_and_the_content_hash_approved(
    author, approver, viewer, client
):
    version = approved_version(author, approver, STEPS)
    client.force_login(viewer)

    body = client.get(f"/plans/{version.plan_id}/versions/1/").content.decode()

    digest = Approval.objects.get(version=version).content_hash
    assert digest == version.content_hash
    assert 'data-reviewer="approver"' in body
    assert "Approved by <strong>approver</strong>" in body
    assert f'approved content <code title="{digest}">{digest[:12]}</code>' in body
    assert "not this version&#x27;s content" not in body


def test_a_policy_approval_reads_as_approved_by_policy_on_the_version_and_replan_pages(
    read_only_replans, author, approver, operator, viewer, client
):
    run = resumed_on_the_policys_approval(author, approver, operator)
    v2 = PlanVersion.objects.get(plan_id=run.plan_id, number=2)
    client.force_login(viewer)

    version_page = client.get(f"/plans/{run.plan_id}/versions/2/").content.decode()
    replan_page = client.get(f"/runs/{run.pk}/replans/").content.decode()

    short = v2.content_hash[:12]
    assert "<strong>approved by policy</strong> (read-only replan)" in version_page
    assert 'data-reviewer="policy" data-by-policy' in version_page
    assert f'approved content <code title="{v2.content_hash}">{short}</code>' in version_page
    approved_by_policy = (
        f'approved by policy (read-only replan) · content <code title="{v2.content_hash}">'
        f"{short}</code>"
    )
    # In the lineage and in the replan's "Review" line.
    assert replan_page.count(approved_by_policy) == 2
    v1_hash = PlanVersion.objects.get(plan_id=run.plan_id, number=1).content_hash
    assert f'approved by approver · content <code title="{v1_hash}">{v1_hash[:12]}</code>' in (
        replan_page
    )
