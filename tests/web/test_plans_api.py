"""The plans API, endpoint by endpoint, with the exact JSON each one answers."""

from __future__ import annotations

import hashlib
import json

import pytest
import yaml
from django.core.serializers.json import DjangoJSONEncoder
from django.db import connection
from django.test import override_settings
from django.test.utils import CaptureQueriesContext

from audit.models import AuditEvent
from forge.plan import canonical_json, content_hash, dump_plan, from_data, to_data
from plans import compilation, services
from plans.models import Plan, PlanVersion

pytestmark = pytest.mark.django_db

DIAGNOSTIC_FREE = []


def json_time(moment):
    return DjangoJSONEncoder().default(moment)


def post(client, path, body):
    return client.post(path, body, content_type="application/json")


def args_hash(args):
    return hashlib.sha256(canonical_json(args).encode()).hexdigest()


def summary(version, **fields):
    """The list form of a version, from what the test saved."""
    return {
        "id": version.pk,
        "plan": version.plan_id,
        "number": version.number,
        "status": version.status,
        "has_errors": version.has_errors,
        "content_hash": version.content_hash,
        "parent": version.parent.number if version.parent_id else None,
        "superseded_by": version.superseded_by.number if version.superseded_by_id else None,
        "replan_reason": version.replan_reason,
        "note": version.note,
        "author": version.author.username,
        "planner": version.planner,
        "source_format": version.source_format,
        "created_at": json_time(version.created_at),
        **fields,
    }


def full(version, **fields):
    version = PlanVersion.objects.get(pk=version.pk)
    return {
        **summary(version),
        "document": version.document,
        "layout": version.layout,
        "diagnostics": version.diagnostics,
        "approvals": [
            {
                "id": approval.pk,
                "reviewer": approval.reviewer.username,
                "by_policy": False,
                "decision": approval.decision,
                "comment": approval.comment,
                "content_hash": version.content_hash,
                "teams": [],
                "created_at": json_time(approval.created_at),
            }
            for approval in version.approvals.all()
        ],
        "rules": [_default_rule(version)],
        "not_counted": [],
        "waiting_for": WAITS if version.status == "awaiting_approval" else [],
        "performed_side_effects": version.performed_side_effects,
        **fields,
    }


# What a version awaiting approval lacks without approval rules (four eyes alone).
WAITS = ["rule default needs 1 person"]


def _default_rule(version, approved_by=None):
    """Without approval rules, one rule: one person other than the author, counted from
    the approvals since the latest stop."""
    if approved_by is None:
        approved_by = []
        for approval in version.approvals.all():
            approved_by = (
                [*approved_by, approval.reviewer.username]
                if (approval.decision == "approved")
                else []
            )
    return {"id": "default", "description": "when no rule matches", "team": None,
            "required": 1, "approved_by": approved_by, "satisfied": bool(approved_by)}  # fmt: skip


# --- POST /plans --------------------------------------------------------------------------


def test_importing_a_document_answers_201_with_version_1_and_its_diagnostics(
    api_client, author, plan_document
):
    document = plan_document()

    response = post(
        api_client(author),
        "/api/v1/plans",
        {"name": "Notes", "document": document, "note": "first"},
    )

    assert response.status_code == 201
    plan = Plan.objects.get()
    version = plan.latest_version
    normalised = to_data(from_data(document))
    assert response.json() == {
        "id": plan.pk,
        "name": "Notes",
        "created_by": "author",
        "created_at": json_time(plan.created_at),
        "status": "awaiting_approval",
        "latest_version": {
            "id": version.pk,
            "plan": plan.pk,
            "number": 1,
            "status": "awaiting_approval",
            "has_errors": False,
            "content_hash": content_hash(from_data(document)),
            "parent": None,
            "superseded_by": None,
            "replan_reason": "",
            "note": "first",
            "author": "author",
            "planner": "editor",
            "source_format": "json",
            "created_at": json_time(version.created_at),
            "document": normalised,
            "layout": {},
            "diagnostics": [],
            "approvals": [],
            "rules": [_default_rule(version, [])],
            "not_counted": [],
            "waiting_for": WAITS,
            "performed_side_effects": [],
        },
    }


def test_a_plan_with_compile_errors_is_saved_with_its_diagnostics(api_client, author):
    document = {
        "goal": "Loop forever",
        "steps": [
            {"id": "a", "description": "Fetch the data set", "depends_on": ["b"], "tool": "noop"},
            {"id": "b", "description": "Clean the data set", "depends_on": ["a"], "tool": "noop"},
        ],
    }

    response = post(api_client(author), "/api/v1/plans", {"name": "Loop", "document": document})

    assert response.status_code == 201
    body = response.json()
    assert (body["status"], body["latest_version"]["has_errors"]) == ("has_errors", True)
    assert body["latest_version"]["diagnostics"][0] == {
        "code": "cycle",
        "severity": "error",
        "message": body["latest_version"]["diagnostics"][0]["message"],
        "nodes": ["a", "b"],
        "edges": [["a", "b"], ["b", "a"]],
    }
    expected = compilation.compile_document(from_data(document)).to_data()["diagnostics"]
    assert body["latest_version"]["diagnostics"] == expected


@pytest.mark.parametrize("fmt", ["yaml", "mermaid", "json"])
def test_a_plan_imports_from_source_text_in_each_format(api_client, author, plan_document, fmt):
    document = from_data(plan_document())
    source = dump_plan(document, fmt)

    response = post(
        api_client(author), "/api/v1/plans", {"name": "Notes", "format": fmt, "source": source}
    )

    assert response.status_code == 201
    version = response.json()["latest_version"]
    assert version["source_format"] == fmt
    assert version["document"] == to_data(load := from_data(version["document"]))
    assert [step.id for step in load.steps] == ["read", "publish"]


def test_a_source_without_format_is_recognised(api_client, author, plan_document):
    source = dump_plan(from_data(plan_document()), "yaml")

    response = post(api_client(author), "/api/v1/plans", {"name": "Notes", "source": source})

    assert response.status_code == 201
    assert response.json()["latest_version"]["source_format"] == "yaml"


def test_a_document_that_does_not_parse_is_a_400_naming_the_code_and_place(api_client, author):
    body = {"name": "Bad", "document": {"goal": "x", "steps": [{"id": "a", "colour": "red"}]}}

    response = post(api_client(author), "/api/v1/plans", body)

    assert response.status_code == 400
    assert response.json() == {
        "detail": "steps[0]: unknown field(s) 'colour'",
        "code": "invalid_document",
        "path": "steps[0]",
    }
    assert Plan.objects.count() == 0


def test_bad_json_source_is_a_400_with_the_parser_code(api_client, author):
    response = post(
        api_client(author), "/api/v1/plans", {"name": "Bad", "format": "json", "source": "{"}
    )

    assert response.status_code == 400
    assert response.json() == {
        "detail": "invalid JSON at line 1, column 2: Expecting property name enclosed in double "
        "quotes",
        "code": "invalid_json",
        "path": "line 1",
    }


@override_settings(FORGE_MAX_PLAN_BYTES=200)
def test_a_document_over_the_size_limit_is_a_413_naming_the_limit(
    api_client, author, plan_document
):
    response = post(
        api_client(author), "/api/v1/plans", {"name": "Big", "document": plan_document()}
    )

    assert response.status_code == 413
    size = len(canonical_json(to_data(from_data(plan_document()))).encode())
    assert response.json() == {
        "detail": f"document is {size} bytes, over the limit of 200 bytes "
        "(max_bytes; FORGE_MAX_PLAN_BYTES sets it)",
        "code": "document_too_large",
    }


@override_settings(FORGE_MAX_PLAN_BYTES=200)
def test_source_over_the_size_limit_is_a_413_too(api_client, author, plan_document):
    source = dump_plan(from_data(plan_document()), "yaml")

    response = post(
        api_client(author), "/api/v1/plans", {"name": "Big", "format": "yaml", "source": source}
    )

    assert response.status_code == 413
    assert response.json()["code"] == "document_too_large"


@override_settings(FORGE_MAX_PLAN_STEPS=1)
def test_a_document_over_the_step_limit_is_a_400_naming_the_limit(
    api_client, author, plan_document
):
    response = post(
        api_client(author), "/api/v1/plans", {"name": "Long", "document": plan_document()}
    )

    assert response.status_code == 400
    assert response.json() == {
        "detail": "document has 2 steps, over the limit of 1 steps "
        "(max_steps; FORGE_MAX_PLAN_STEPS sets it)",
        "code": "too_many_steps",
    }


def rich_plan(step_count, keys):
    """A chain of echo steps of 12 + 2 * ``keys`` nodes each (the first, 11 + 2 * ``keys``)."""
    return {
        "goal": "long",
        "steps": [
            {"id": f"s{n}", "description": "say it", "tool": "echo",
             "depends_on": [f"s{n - 1}"] if n else [], "args": {f"k{k}": k for k in range(keys)}}
            for n in range(step_count)
        ],
    }  # fmt: skip


def plan_body(path, data, given):
    """The body of a compile or a new plan, the plan given as a document or as source."""
    if given == "document":
        body = {"document": data}
    else:
        body = {
            "format": given,
            "source": json.dumps(data) if given == "json" else yaml.safe_dump(data),
        }
    return {"name": "Long", **body} if path == "/api/v1/plans" else body


LIMITED = "/api/v1/compile", "/api/v1/plans"
GIVEN = "document", "json", "yaml"


# 200 steps allowed: 10,000 nodes. The plan of the issue (10,000 steps of about 35 nodes
# against the default 5,000 steps) in small: 300 steps of 44 nodes, 13,204 nodes.
@override_settings(FORGE_MAX_PLAN_STEPS=200)
@pytest.mark.parametrize("given", GIVEN)
@pytest.mark.parametrize("path", LIMITED)
def test_a_long_plan_is_refused_for_its_steps_naming_the_setting_not_for_its_nodes(
    api_client, author, path, given
):
    response = post(api_client(author), path, plan_body(path, rich_plan(300, 16), given))

    assert response.status_code == 400
    assert response.json()["code"] == "too_many_steps"
    assert response.json()["detail"].endswith(
        "over the limit of 200 steps (max_steps; FORGE_MAX_PLAN_STEPS sets it)"
    )
    assert Plan.objects.count() == 0


@override_settings(FORGE_MAX_PLAN_STEPS=200)
@pytest.mark.parametrize("given", GIVEN)
@pytest.mark.parametrize("path", LIMITED)
def test_a_plan_of_steps_too_rich_is_refused_for_its_nodes_naming_the_step_setting(
    api_client, author, path, given
):
    # 100 steps of 132 nodes: 13,204 nodes
    response = post(api_client(author), path, plan_body(path, rich_plan(100, 60), given))

    assert response.status_code == 400
    assert response.json()["code"] == "too_many_nodes"
    assert response.json()["detail"].endswith(
        "over the limit of 10000 (max_nodes; FORGE_MAX_PLAN_STEPS sets it)"
    )


@override_settings(FORGE_MAX_PLAN_STEPS=300)
@pytest.mark.parametrize("given", GIVEN)
def test_the_node_limit_follows_the_step_limit_as_the_clis_does(api_client, author, given):
    """Allowed 300 steps, the API reads 15,000 nodes, as ``forge compile --max-steps 300``
    does: the plan refused above compiles."""
    path = "/api/v1/compile"
    response = post(api_client(author), path, plan_body(path, rich_plan(300, 16), given))

    assert response.status_code == 200, response.content[:300]
    assert response.json()["ok"] is True
    assert len(response.json()["graph"]["nodes"]) == 300


def test_text_a_database_cannot_store_is_refused_before_it_reaches_one(
    api_client, author, plan_document
):
    document = plan_document(goal="nul \x00 inside")

    response = post(api_client(author), "/api/v1/plans", {"name": "Nul", "document": document})

    assert response.status_code == 400
    assert response.json() == {
        "detail": "goal: contains a NUL character or a lone surrogate",
        "code": "invalid_document",
        "path": "goal",
    }


@pytest.mark.parametrize(
    "body",
    [
        {"name": "Both", "document": {"goal": "x"}, "source": "goal: x"},
        {"name": "Neither"},
        {"name": "", "document": {"goal": "x"}},
        {"name": "Format alone", "document": {"goal": "x"}, "format": "yaml"},
        {"name": "Dot", "format": "dot", "source": "digraph {}"},
        {"name": "Nul\x00", "document": {"goal": "x"}},
    ],
)
def test_a_body_that_breaks_the_schema_is_a_422(api_client, author, body):
    response = post(api_client(author), "/api/v1/plans", body)

    assert response.status_code == 422
    assert response.json()["code"] == "validation_error"
    assert Plan.objects.count() == 0


def test_a_draft_waits_for_submission(api_client, author, plan_document):
    response = post(
        api_client(author),
        "/api/v1/plans",
        {"name": "Draft", "document": plan_document(), "submit": False},
    )

    assert response.json()["status"] == "draft"


# --- GET /plans, /plans/{id} --------------------------------------------------------------


def test_the_plan_list_shows_each_plan_with_its_latest_version(
    api_client, viewer, author, make_plan
):
    first = make_plan(author, "first")
    second = make_plan(author, "second")
    newer = services.create_version(second.plan, author, from_data(second.document), note="again")

    response = api_client(viewer).get("/api/v1/plans")

    assert response.status_code == 200
    assert response.json() == {
        "count": 2,
        "items": [
            {
                "id": second.plan_id,
                "name": "second",
                "created_by": "author",
                "created_at": json_time(second.plan.created_at),
                "status": "awaiting_approval",
                "latest_version": summary(newer),
            },
            {
                "id": first.plan_id,
                "name": "first",
                "created_by": "author",
                "created_at": json_time(first.plan.created_at),
                "status": "awaiting_approval",
                "latest_version": summary(first),
            },
        ],
    }
    assert summary(newer)["parent"] == 1


def test_the_plan_list_searches_names_and_filters_by_status(
    api_client, viewer, author, approver, make_plan
):
    report = make_plan(author, "Supplier Report")
    make_plan(author, "Release notes")
    services.approve(report, approver)
    client = api_client(viewer)

    def names(query):
        return [item["name"] for item in client.get(f"/api/v1/plans?{query}").json()["items"]]

    assert names("q=report") == ["Supplier Report"]
    assert names("status=approved") == ["Supplier Report"]
    assert names("status=awaiting_approval") == ["Release notes"]
    assert names("q=nothing") == []
    assert client.get("/api/v1/plans?status=bogus").status_code == 422


@override_settings(NINJA_PAGINATION_PER_PAGE=2)
def test_the_plan_list_is_paginated(api_client, viewer, author, make_plan):
    for n in range(3):
        make_plan(author, f"plan {n}")
    client = api_client(viewer)

    page1 = client.get("/api/v1/plans").json()
    page2 = client.get("/api/v1/plans?page=2").json()

    assert page1["count"] == page2["count"] == 3
    assert [item["name"] for item in page1["items"] + page2["items"]] == [
        "plan 2",
        "plan 1",
        "plan 0",
    ]


def test_a_plan_shows_its_latest_version_in_full(api_client, viewer, approved_version):
    plan = approved_version.plan

    response = api_client(viewer).get(f"/api/v1/plans/{plan.pk}")

    assert response.status_code == 200
    assert response.json() == {
        "id": plan.pk,
        "name": "release notes",
        "created_by": "author",
        "created_at": json_time(plan.created_at),
        "status": "approved",
        "latest_version": full(approved_version, status="approved"),
    }
    assert response.json()["latest_version"]["approvals"][0]["comment"] == "looks right"


def test_an_unknown_plan_is_a_404(api_client, viewer):
    for path in ("/plans/999", "/plans/999/versions", "/plans/999/versions/1"):
        response = api_client(viewer).get(f"/api/v1{path}")
        assert response.status_code == 404
        assert response.json() == {"detail": "Not found", "code": "not_found"}


# --- Versions -----------------------------------------------------------------------------


def test_the_versions_of_a_plan_are_listed_newest_first(api_client, viewer, author, make_plan):
    first = make_plan(author)
    second = services.create_version(first.plan, author, from_data(first.document), note="v2")

    response = api_client(viewer).get(f"/api/v1/plans/{first.plan_id}/versions")

    first.refresh_from_db()  # superseded by the second, submitted while it waited
    assert response.status_code == 200
    assert response.json() == {"count": 2, "items": [summary(second), summary(first)]}
    assert (first.status, first.superseded_by_id) == ("superseded", second.pk)


def test_a_version_shows_document_diagnostics_approvals_and_side_effects(
    api_client, viewer, approved_version
):
    path = f"/api/v1/plans/{approved_version.plan_id}/versions/1"

    response = api_client(viewer).get(path)

    assert response.status_code == 200
    assert response.json() == full(approved_version, status="approved")
    assert api_client(viewer).get(path.replace("/1", "/2")).status_code == 404


def test_saving_a_new_version_answers_201_with_it(api_client, author, make_plan, plan_document):
    first = make_plan(author)
    document = plan_document(goal="Summarise the release notes briefly")

    response = post(
        api_client(author),
        f"/api/v1/plans/{first.plan_id}/versions",
        {"document": document, "note": "shorter", "replan_reason": "too long"},
    )

    assert response.status_code == 201
    second = PlanVersion.objects.get(plan=first.plan, number=2)
    assert response.json() == {
        **summary(second),
        "status": "awaiting_approval",
        "parent": 1,
        "note": "shorter",
        "replan_reason": "too long",
        "author": "author",
        "document": to_data(from_data(document)),
        "layout": {},
        "diagnostics": [],
        "approvals": [],
        "rules": [_default_rule(second, [])],
        "not_counted": [],
        "waiting_for": WAITS,
        "performed_side_effects": [],
    }
    assert Plan.objects.get().latest_version == second


def test_a_new_version_may_derive_from_an_older_parent(api_client, author, make_plan):
    first = make_plan(author)
    services.create_version(first.plan, author, from_data(first.document))
    client = api_client(author)

    response = post(
        client, f"/api/v1/plans/{first.plan_id}/versions", {"document": first.document, "parent": 1}
    )
    missing = post(
        client, f"/api/v1/plans/{first.plan_id}/versions", {"document": first.document, "parent": 9}
    )

    assert (response.status_code, response.json()["number"], response.json()["parent"]) == (
        201,
        3,
        1,
    )
    assert missing.status_code == 404
    assert missing.json() == {
        "detail": f"plan {first.plan_id} has no version 9",
        "code": "not_found",
    }


def test_a_new_version_does_not_inherit_the_approval(api_client, author, approved_version):
    response = post(
        api_client(author),
        f"/api/v1/plans/{approved_version.plan_id}/versions",
        {"document": approved_version.document},
    )

    assert response.json()["status"] == "awaiting_approval"
    assert response.json()["approvals"] == []
    assert response.json()["content_hash"] == approved_version.content_hash


# --- Review -------------------------------------------------------------------------------


def test_approving_answers_the_approval(api_client, approver, author, make_plan):
    version = make_plan(author)

    response = post(
        api_client(approver),
        f"/api/v1/plans/{version.plan_id}/versions/1/approve",
        {"comment": "ship it"},
    )

    assert response.status_code == 200
    approval = version.approvals.get()
    assert response.json() == {
        "id": approval.pk,
        "reviewer": "approver",
        "by_policy": False,
        "decision": "approved",
        "comment": "ship it",
        "content_hash": version.content_hash,
        "teams": [],
        "created_at": json_time(approval.created_at),
        "version_status": "approved",
        "waiting_for": [],
    }
    assert PlanVersion.objects.get(pk=version.pk).status == "approved"


def test_rejecting_answers_the_rejection(api_client, approver, author, make_plan):
    version = make_plan(author)

    response = post(api_client(approver), f"/api/v1/plans/{version.plan_id}/versions/1/reject", {})

    assert response.status_code == 200
    approval = version.approvals.get()
    assert response.json() == {
        "id": approval.pk,
        "reviewer": "approver",
        "decision": "rejected",
        "by_policy": False,
        "comment": "",
        "content_hash": version.content_hash,
        "teams": [],
        "created_at": json_time(approval.created_at),
    }
    assert PlanVersion.objects.get(pk=version.pk).status == "rejected"


def test_an_author_cannot_approve_their_own_version(api_client, make_user, make_plan):
    both = make_user("both", "author", "approver")
    version = make_plan(both)

    approve = post(api_client(both), f"/api/v1/plans/{version.plan_id}/versions/1/approve", {})
    reject = post(api_client(both), f"/api/v1/plans/{version.plan_id}/versions/1/reject", {})

    assert approve.status_code == reject.status_code == 403
    assert approve.json() == {
        "detail": "Authors cannot approve their own versions",
        "code": "permission_denied",
    }
    assert reject.json() == {
        "detail": "Authors cannot reject their own versions",
        "code": "permission_denied",
    }
    assert PlanVersion.objects.get(pk=version.pk).status == "awaiting_approval"


def test_a_version_with_compile_errors_cannot_be_approved(api_client, approver, author, make_plan):
    broken = {"goal": "g", "steps": [{"id": "a", "description": "Call the tool", "tool": "nope"}]}
    version = make_plan(author, document=broken)

    response = post(api_client(approver), f"/api/v1/plans/{version.plan_id}/versions/1/approve", {})

    assert response.status_code == 409
    assert response.json() == {
        "detail": "version 1 has compile errors and cannot be approved",
        "code": "has_errors",
        "diagnostics": [
            {
                "code": "unknown_tool",
                "severity": "error",
                "message": "step 'a' uses unknown tool 'nope'",
                "nodes": ["a"],
                "edges": [],
                "hint": "did you mean `noop`?",
            }
        ],
    }
    assert version.approvals.count() == 0


def test_a_draft_cannot_be_reviewed(api_client, approver, author, make_plan):
    version = make_plan(author, submit=False)

    response = post(api_client(approver), f"/api/v1/plans/{version.plan_id}/versions/1/approve", {})

    assert response.status_code == 409
    assert response.json() == {
        "detail": "version 1 is a draft; its author must submit it first",
        "code": "not_submitted",
    }


def test_reviewing_an_unknown_version_is_a_404(api_client, approver):
    response = post(api_client(approver), "/api/v1/plans/5/versions/1/approve", {})

    assert response.status_code == 404


# --- Diff and export ----------------------------------------------------------------------


def test_the_diff_names_added_removed_and_changed_steps_and_edges(
    api_client, viewer, author, make_plan, plan_document
):
    first = make_plan(author)
    document = plan_document(goal="Summarise and check")
    document["steps"][1]["args"] = {"summary": "changed"}
    document["steps"].append(
        {"id": "check", "description": "Check the summary wording", "depends_on": ["read"]}
    )
    services.create_version(first.plan, author, from_data(document))

    response = api_client(viewer).get(f"/api/v1/plans/{first.plan_id}/diff?from=1&to=2")

    assert response.status_code == 200
    assert response.json() == {
        "plan": first.plan_id,
        "from": 1,
        "to": 2,
        "added_steps": ["check"],
        "removed_steps": [],
        "changed_steps": [
            {
                "id": "publish",
                "changes": [
                    {
                        "field": "args",
                        "before": {"summary": "ok"},
                        "after": {"summary": "changed"},
                        "lines": ["args.summary: ok → changed"],
                    }
                ],
            }
        ],
        "added_edges": [["read", "check"]],
        "removed_edges": [],
        "plan_changes": [
            {
                "field": "goal",
                "before": "Summarise the release notes",
                "after": "Summarise and check",
                "lines": ["goal: Summarise the release notes → Summarise and check"],
            }
        ],
    }


def test_a_diff_with_an_unknown_version_is_a_404(api_client, viewer, author, make_plan):
    version = make_plan(author)
    client = api_client(viewer)

    response = client.get(f"/api/v1/plans/{version.plan_id}/diff?from=1&to=3")

    assert response.status_code == 404
    assert response.json() == {
        "detail": f"plan {version.plan_id} has no version 3",
        "code": "not_found",
    }
    assert client.get(f"/api/v1/plans/{version.plan_id}/diff?from=1").status_code == 422


@pytest.mark.parametrize(
    ("fmt", "content_type", "extension"),
    [
        ("json", "application/json", "json"),
        ("yaml", "application/yaml; charset=utf-8", "yaml"),
        ("mermaid", "text/vnd.mermaid; charset=utf-8", "mmd"),
        ("dot", "text/vnd.graphviz; charset=utf-8", "dot"),
    ],
)
def test_a_version_exports_as_text_in_each_format(
    api_client, viewer, author, make_plan, fmt, content_type, extension
):
    version = make_plan(author)

    response = api_client(viewer).get(
        f"/api/v1/plans/{version.plan_id}/versions/1/export?format={fmt}"
    )

    assert response.status_code == 200
    assert response.content.decode() == dump_plan(from_data(version.document), fmt)
    assert response["Content-Type"] == content_type
    assert response["Content-Disposition"] == (
        f'attachment; filename="plan-{version.plan_id}-v1.{extension}"'
    )


def test_export_defaults_to_json_and_refuses_unknown_formats(api_client, viewer, author, make_plan):
    version = make_plan(author)
    path = f"/api/v1/plans/{version.plan_id}/versions/1/export"
    client = api_client(viewer)

    assert json.loads(client.get(path).content) == version.document
    assert client.get(f"{path}?format=png").status_code == 422


# --- Compile ------------------------------------------------------------------------------


def test_compile_answers_ok_diagnostics_and_graph_and_saves_nothing(
    api_client, author, plan_document
):
    client = api_client(author)
    events = AuditEvent.objects.count()

    response = post(client, "/api/v1/compile", {"document": plan_document()})

    assert response.status_code == 200
    graph = compilation.compile_document(from_data(plan_document())).graph
    assert response.json() == {
        "ok": True,
        "diagnostics": [],
        "graph": {
            "content_hash": content_hash(from_data(plan_document())),
            "deliverable": "publish",
            "order": ["read", "publish"],
            "nodes": [
                {
                    "id": "read",
                    "tool": "file_read",
                    "allowed_tools": [],
                    "args_hash": args_hash({"path": "notes.md"}),
                    "side_effect": "read",
                    "timeout_s": 60.0,
                    "approval_reasons": [],
                    "depends_on": [],
                    "fingerprint": graph.nodes["read"].fingerprint,
                },
                {
                    "id": "publish",
                    "tool": "echo",
                    "allowed_tools": [],
                    "args_hash": args_hash({"summary": "ok"}),
                    "side_effect": "none",
                    "timeout_s": 60.0,
                    "approval_reasons": [],
                    "depends_on": ["read"],
                    "fingerprint": graph.nodes["publish"].fingerprint,
                },
            ],
            "edges": [["read", "publish"]],
            "data_edges": [],
        },
        "impact": {
            "steps": 2,
            "scopes": ["compute", "file_read"],
            "tools": ["echo", "file_read"],
            "side_effects": {"none": 1, "read": 1},
            "agent_steps": 0,
            "hosts": [],
            "hosts_unknown": [],
            "mcp": [],
            "files_written": [],
            "files_unknown": [],
            "commands": [],
            "pauses": [],
            "reviews": [],
            "plan_scopes": [],
            "tokens": 0,
            "cost": 0.0,
            "estimated_steps": 0,
            "duration": {
                "seconds": 0.0,
                "path": ["read"],
                "unknown": ["read", "publish"],
                "text": "unknown (2 steps have no duration estimate)",
            },
        },
    }
    assert Plan.objects.count() == 0
    assert AuditEvent.objects.count() == events


def test_compile_reports_every_error_and_no_graph(api_client, author):
    source = "goal: g\nsteps:\n  - {id: a, depends_on: [zz], tool: nope}\n"

    response = post(api_client(author), "/api/v1/compile", {"format": "yaml", "source": source})

    assert response.status_code == 200
    assert response.json() == {
        "ok": False,
        "diagnostics": compilation.compile_document(from_data({
            "goal": "g", "steps": [{"id": "a", "depends_on": ["zz"], "tool": "nope"}],
        })).to_data()["diagnostics"],
        "graph": None,
        "impact": None,
    }  # fmt: skip
    codes = [d["code"] for d in response.json()["diagnostics"]]
    assert {"missing_dependency", "unknown_tool"} <= set(codes)


def test_compile_refuses_a_document_that_does_not_parse(api_client, author):
    response = post(api_client(author), "/api/v1/compile", {"format": "yaml", "source": "a: [b"})

    assert response.status_code == 400
    assert response.json()["code"] == "invalid_yaml"


# --- Tools --------------------------------------------------------------------------------


def test_the_tool_catalogue_lists_every_tool_with_its_contract_and_policy(api_client, viewer):
    response = api_client(viewer).get("/api/v1/tools")

    assert response.status_code == 200
    body = response.json()
    assert body["count"] == len(compilation.registry())
    echo = next(item for item in body["items"] if item["name"] == "echo")
    assert echo == {
        "name": "echo",
        "description": "Returns its arguments unchanged.",
        "args_schema": {"type": "object"},
        "permission_scope": "compute",
        "side_effect": "none",
        "idempotent": True,
        "risk": "low",
        "default_timeout_s": 60.0,
        "source": "builtin",
        "output_schema": None,
        "echoes_args": True,
        "allowed": True,
        "requires_approval": False,
        "policy_reasons": [],
    }
    names = [item["name"] for item in body["items"]]
    assert names == sorted(names)


def test_the_tool_catalogue_follows_the_configured_policy(api_client, viewer, tmp_path):
    policy = tmp_path / "policy.yaml"
    policy.write_text("allow: {compute: [echo]}\nrequire_approval: [compute]\n")

    with override_settings(FORGE_POLICY=str(policy)):
        items = {i["name"]: i for i in api_client(viewer).get("/api/v1/tools").json()["items"]}

    assert (items["echo"]["allowed"], items["echo"]["requires_approval"]) == (True, True)
    assert items["echo"]["policy_reasons"] == ["policy requires approval for scope 'compute'"]
    assert (items["noop"]["allowed"], items["noop"]["policy_reasons"]) == (
        False,
        ["policy does not allow tool 'noop' (scope 'compute')"],
    )


def test_lists_take_the_same_few_queries_however_many_rows(api_client, viewer, author, make_plan):
    client = api_client(viewer)
    first = make_plan(author, "one")
    client.get("/api/v1/plans")  # the token's last_used_at is written once a minute

    def queries(path):
        with CaptureQueriesContext(connection) as context:
            assert client.get(path).status_code == 200
        return len(context.captured_queries)

    few = (queries("/api/v1/plans"), queries(f"/api/v1/plans/{first.plan_id}/versions"))
    for n in range(4):
        services.create_version(first.plan, author, from_data(first.document))
        make_plan(author, f"plan {n}")

    many = (queries("/api/v1/plans"), queries(f"/api/v1/plans/{first.plan_id}/versions"))
    assert many == few


def test_steps_placed_by_hand_are_saved_beside_the_document_outside_its_hash(
    api_client, author, make_plan
):
    # Issue 12, problem 8: positions are kept with the version, and moving a step changes
    # no content hash (so no approval and nothing that runs).
    first = make_plan(author)
    step_ids = [step["id"] for step in first.document["steps"]]
    positions = {step_id: [10.04 * n, -20.0] for n, step_id in enumerate(step_ids)}
    positions["gone"] = [1, 2]  # a step deleted since it was placed

    response = post(
        api_client(author),
        f"/api/v1/plans/{first.plan_id}/versions",
        {"document": first.document, "layout": {"positions": positions}},
    )

    assert response.status_code == 201
    second = PlanVersion.objects.get(plan=first.plan, number=2)
    expected = {step_id: [round(10.04 * n, 1), -20.0] for n, step_id in enumerate(step_ids)}
    assert second.layout == {"positions": expected}
    assert response.json()["layout"] == {"positions": expected}
    assert second.content_hash == first.content_hash
    assert second.document == first.document
    assert first.layout == {}


@pytest.mark.parametrize(
    "positions",
    [{"a": [1]}, {"a": [1, 2, 3]}, {"a": ["x", 2]}, {"a": [1e12, 0]}, {"a": None}],
)
def test_a_position_that_is_not_two_finite_numbers_is_a_422(
    api_client, author, make_plan, positions
):
    first = make_plan(author)
    response = post(
        api_client(author),
        f"/api/v1/plans/{first.plan_id}/versions",
        {"document": first.document, "layout": {"positions": positions}},
    )

    assert response.status_code == 422
    assert PlanVersion.objects.filter(plan=first.plan).count() == 1


def test_a_diagnostic_with_a_fix_says_how_and_others_carry_no_hint(api_client, author):
    document = {
        "goal": "Sketched in the editor",
        "steps": [
            {"id": "a", "description": "Read the notes file"},
            {"id": "b", "description": "Call it", "depends_on": ["a"], "tool": "teleport"},
        ],
    }
    response = post(api_client(author), "/api/v1/compile", {"document": document})

    by_code = {d["code"]: d for d in response.json()["diagnostics"]}
    assert by_code["agent_without_tools"]["nodes"] == ["a"]
    assert "tools_allowed" in by_code["agent_without_tools"]["hint"]
    assert "hint" not in by_code["unknown_tool"]
