"""plans.services: versions, review rules, side effects carried forward, and the audit."""

from __future__ import annotations

import json

import pytest
from django.core.exceptions import ImproperlyConfigured, PermissionDenied
from django.test import override_settings

from audit.models import AuditEvent
from audit.services import verify
from forge.compiler import PerformedSideEffect
from forge.plan import content_hash, from_data
from plans import compilation, services
from plans.errors import (
    UnknownVersion,
    VersionHasErrors,
    VersionNotApproved,
    VersionNotSubmitted,
)
from plans.models import Plan, PlanVersion

pytestmark = pytest.mark.django_db

BROKEN = {"goal": "g", "steps": [{"id": "a", "description": "Call the tool", "tool": "nope"}]}


def events(action=None):
    queryset = AuditEvent.objects.order_by("seq")
    return list(queryset.filter(action=action) if action else queryset)


def fresh(version):
    return PlanVersion.objects.get(pk=version.pk)


# --- Creating plans and versions ------------------------------------------------------------


def test_creating_a_plan_saves_version_1_and_audits_both(author, make_plan, plan_document):
    version = make_plan(author, note="first cut")

    plan = Plan.objects.get()
    assert (plan.latest_version, version.number, version.parent) == (version, 1, None)
    assert version.content_hash == content_hash(from_data(plan_document()))
    assert [(e.actor, e.action, e.object_type, e.object_id) for e in events()[-2:]] == [
        ("author", "plan.created", "plan", str(plan.pk)),
        ("author", "plan_version.created", "plan", str(plan.pk)),
    ]
    assert events("plan.created")[0].payload == {"plan": plan.pk, "name": "release notes"}
    assert events("plan_version.created")[0].payload == {
        "plan": plan.pk,
        "version": 1,
        "content_hash": version.content_hash,
        "parent": None,
        "status": "awaiting_approval",
        "source_format": "json",
        "planner": "editor",
        "steps": 2,
        "diagnostics": {"error": 0, "warning": 0, "info": 0},
        "diagnostic_codes": [],
        "performed_side_effects": 0,
        "note": "first cut",
        "replan_reason": "",
    }


def test_a_version_with_errors_stores_its_diagnostics_and_counts_them_in_the_audit(
    author, make_plan
):
    version = make_plan(author, document=BROKEN)

    expected = compilation.compile_document(from_data(BROKEN))
    assert version.diagnostics == [d.to_data() for d in expected.diagnostics]
    assert (version.has_errors, version.status) == (True, "has_errors")
    payload = events("plan_version.created")[0].payload
    assert payload["diagnostics"]["error"] == len(expected.errors) == 1
    assert payload["diagnostic_codes"] == sorted({d.code for d in expected.diagnostics})


def test_versions_are_numbered_in_order_and_derive_from_the_latest_by_default(author, make_plan):
    first = make_plan(author)
    second = services.create_version(first.plan, author, from_data(first.document))
    third = services.create_version(first.plan, author, from_data(first.document), parent=first)

    assert [(v.number, v.parent_id) for v in (first, second, third)] == [
        (1, None),
        (2, first.pk),
        (3, first.pk),
    ]
    assert Plan.objects.get().latest_version == third


def test_a_parent_from_another_plan_is_refused(author, make_plan):
    mine, other = make_plan(author, "mine"), make_plan(author, "other")

    with pytest.raises(UnknownVersion):
        services.create_version(mine.plan, author, from_data(mine.document), parent=other)


def test_a_saved_version_is_immutable_but_for_its_review_state(author, make_plan):
    version = make_plan(author)
    version.note = "rewritten"

    with pytest.raises(RuntimeError, match="immutable"):
        version.save()
    with pytest.raises(RuntimeError, match="immutable"):
        version.save(update_fields=["note", "status"])


def test_the_audit_event_commits_or_rolls_back_with_the_version(author, make_plan, monkeypatch):
    first = make_plan(author)

    def broken_record(*args, **kwargs):
        raise RuntimeError("audit down")

    monkeypatch.setattr(services, "record", broken_record)
    with pytest.raises(RuntimeError, match="audit down"):
        services.create_version(first.plan, author, from_data(first.document))

    assert list(PlanVersion.objects.values_list("number", flat=True)) == [1]
    assert Plan.objects.get().latest_version == first


# --- Performed side effects ---------------------------------------------------------------


def test_a_child_carries_its_parents_side_effects_and_those_of_the_parents_runs(
    author, make_plan, plan_document
):
    written = PerformedSideEffect("shell", "save", "a" * 64)
    document = plan_document()
    document["steps"][1] = {
        "id": "publish",
        "description": "Publish the summary with the site tool",
        "depends_on": ["read"],
        "tool": "shell",
        "args": {"argv": ["make", "publish"]},
        "done_when": {"required_keys": ["exit_code"]},
        "rollback_hint": "make unpublish",
    }
    first = make_plan(author, document=document)
    graph = compilation.compile_version(first).graph
    again = PerformedSideEffect("shell", "publish", graph.nodes["publish"].binding.args_hash)

    second = services.create_version(
        first.plan, author, from_data(document), performed_side_effects=[written, again, written]
    )
    third = services.create_version(first.plan, author, from_data(document))

    assert second.performed_side_effects == [written.to_data(), again.to_data()]
    assert third.performed_side_effects == second.performed_side_effects
    assert [d["code"] for d in second.diagnostics] == ["repeats_side_effect"]
    assert services.performed_side_effects_for(None) == []
    assert services.performed_side_effects_for(second, [written]) == second.performed_side_effects


# --- Review ---------------------------------------------------------------------------------


def test_approval_records_the_decision_and_audits_it(author, approver, make_plan):
    version = make_plan(author)

    approval = services.approve(version, approver, "good")

    assert (approval.reviewer, approval.decision, approval.comment) == (
        approver,
        "approved",
        "good",
    )
    assert fresh(version).status == version.status == "approved"
    assert events("plan_version.approved")[0].payload == {
        "plan": version.plan_id,
        "version": 1,
        "content_hash": version.content_hash,
        "approval": approval.pk,
        "comment": "good",
        "approved_hash": version.content_hash,
        "previous_status": "awaiting_approval",
        "status": "approved",
        "teams": [],
        "rules_version": 0,
        "rules": [
            {
                "id": "default",
                "description": "when no rule matches",
                "team": None,
                "required": 1,
                "approved_by": ["approver"],
                "satisfied": True,
            }
        ],
        "not_counted": [],
    }
    assert (approval.content_hash, len(approval.signature)) == (version.content_hash, 64)


def test_a_second_approval_by_another_approver_is_recorded(author, approver, make_user, make_plan):
    version = make_plan(author)
    other = make_user("other", "approver")

    services.approve(version, approver)
    services.approve(version, other, "me too")

    assert fresh(version).status == "approved"
    assert [a.reviewer.username for a in fresh(version).approvals.all()] == ["approver", "other"]


def test_the_latest_decision_is_the_status(author, approver, make_user, make_plan):
    version = make_plan(author)
    other = make_user("other", "approver")

    services.approve(version, approver)
    services.reject(version, other, "found a problem")
    assert fresh(version).status == "rejected"
    services.approve(version, other, "fixed upstream")
    assert fresh(version).status == "approved"
    assert [e.payload["previous_status"] for e in events() if "previous_status" in e.payload] == [
        "awaiting_approval",
        "approved",
        "rejected",
    ]


def test_only_holders_of_plan_approve_other_than_the_author_may_review(
    author, operator, make_user, make_plan
):
    both = make_user("both", "author", "approver")
    version = make_plan(both)

    with pytest.raises(PermissionDenied, match="This needs the plan.approve permission"):
        services.approve(version, operator)
    with pytest.raises(PermissionDenied, match="Authors cannot reject their own versions"):
        services.reject(version, both)
    assert fresh(version).approvals.count() == 0


def test_a_version_with_errors_may_be_rejected_but_not_approved(author, approver, make_plan):
    version = make_plan(author, document=BROKEN)

    with pytest.raises(VersionHasErrors) as refused:
        services.approve(version, approver)
    services.reject(version, approver, "does not compile")

    assert refused.value.diagnostics == [d for d in version.diagnostics if d["severity"] == "error"]
    assert (fresh(version).status, fresh(version).has_errors) == ("rejected", True)


def test_a_new_version_never_inherits_an_approval(author, approved_version):
    child = services.create_version(
        approved_version.plan, author, from_data(approved_version.document)
    )

    assert (child.status, child.approvals.count()) == ("awaiting_approval", 0)
    assert fresh(approved_version).status == "approved"


def test_a_draft_is_submitted_before_review(author, approver, make_plan):
    draft = make_plan(author, submit=False)
    assert (draft.status, draft.submitted) == ("draft", False)
    with pytest.raises(VersionNotSubmitted):
        services.approve(draft, approver)

    submitted = services.submit_version(draft, author)
    services.submit_version(draft, author)  # a second submission changes nothing

    assert (submitted.status, submitted.submitted) == ("awaiting_approval", True)
    assert len(events("plan_version.submitted")) == 1
    services.approve(draft, approver)


def test_a_draft_with_errors_cannot_be_submitted(author, make_plan):
    draft = make_plan(author, document=BROKEN, submit=False)

    with pytest.raises(VersionHasErrors):
        services.submit_version(draft, author)


# --- Runnable -----------------------------------------------------------------------------


def test_only_an_approved_compiling_version_is_runnable(author, approver, make_plan):
    waiting = make_plan(author)
    broken = make_plan(author, document=BROKEN)

    with pytest.raises(VersionNotApproved):
        compilation.runnable_graph(waiting)
    with pytest.raises(VersionHasErrors):
        compilation.runnable_graph(broken)
    services.approve(waiting, approver)
    graph = compilation.runnable_graph(fresh(waiting))

    assert graph.order == ("read", "publish")
    assert graph.content_hash == waiting.content_hash


def test_an_approved_version_that_no_longer_compiles_is_not_runnable(approved_version, tmp_path):
    policy = tmp_path / "policy.json"
    policy.write_text(json.dumps({"allow": {"compute": ["*"]}}))  # file_read is no longer allowed

    with override_settings(FORGE_POLICY=str(policy)), pytest.raises(VersionHasErrors) as refused:
        compilation.runnable_graph(fresh(approved_version))

    assert [d["code"] for d in refused.value.diagnostics] == ["unauthorized_tool"]


# --- The compiler and its policy ----------------------------------------------------------


def test_the_compiler_is_built_once_per_policy(tmp_path):
    assert compilation.compiler() is compilation.compiler()
    policy = tmp_path / "policy.yaml"
    policy.write_text("allow: {compute: ['*']}\n")

    with override_settings(FORGE_POLICY=str(policy)):
        assert compilation.policy().allow == {"compute": ("*",)}
        assert compilation.compiler().registry is compilation.registry()


@pytest.mark.parametrize("content", ["allow: [oops]\n", "{not json", None])
def test_an_unreadable_policy_is_a_configuration_error(tmp_path, content):
    policy = tmp_path / ("policy.json" if content == "{not json" else "policy.yaml")
    if content is not None:
        policy.write_text(content)

    with override_settings(FORGE_POLICY=str(policy)), pytest.raises(ImproperlyConfigured):
        compilation.compiler()


# --- Secrets ------------------------------------------------------------------------------


def test_no_secret_from_a_plan_reaches_the_audit_trail(
    api_client, author, approver, make_plan, plan_document
):
    document = plan_document()
    document["steps"][1]["args"] = {
        "api_key": "sk-live-0123456789abcdef",
        "password": "hunter2-hunter2",
        "headers": {"Authorization": "Bearer abc.def.ghi"},
    }
    token = "forge_0123456789ab_" + "S" * 43
    version = make_plan(author, document=document, note=f"uses Bearer xyz123 and {token}")
    services.approve(version, approver, f"token {token}")
    client = api_client(author)
    client.get(f"/api/v1/plans/{version.plan_id}/versions/1/export?format=yaml")
    client.get(f"/api/v1/plans/{version.plan_id}/diff?from=1&to=1")

    trail = json.dumps([e.payload for e in events()])
    for secret in ("sk-live-0123456789abcdef", "hunter2-hunter2", "abc.def.ghi", "xyz123", token):
        assert secret not in trail
    assert verify().ok
