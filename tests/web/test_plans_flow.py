"""The issue's "done when", through HTTP only, as two people with API tokens would do it:
import seed 003's example unchanged, read its diagnostics, save a second version, have
another user approve it, fetch the diff and the Mermaid export, and find every one of
those actions in an audit trail an operator verifies."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from django.test import Client

from forge.plan import dump_plan, from_data
from plans import compilation

pytestmark = pytest.mark.django_db

SEED = Path(__file__).resolve().parents[2] / "examples" / "agent-step-in-chinese.json"


def test_import_review_diff_export_and_audit_through_the_api(token_for, author, approver, operator):
    alice = Client(headers={"authorization": f"Bearer {token_for(author)}"})
    bob = Client(headers={"authorization": f"Bearer {token_for(approver)}"})
    olga = Client(headers={"authorization": f"Bearer {token_for(operator)}"})
    source = SEED.read_text(encoding="utf-8")

    # 1. Import the seed's example as it is, and see its diagnostics.
    created = alice.post(
        "/api/v1/plans",
        {"name": "Supplier risk", "format": "json", "source": source},
        content_type="application/json",
    )
    assert created.status_code == 201
    plan_id = created.json()["id"]
    expected = compilation.compile_document(from_data(json.loads(source)))
    diagnostics = [d.to_data() for d in expected.diagnostics]
    assert created.json()["latest_version"]["diagnostics"] == diagnostics
    assert "unverifiable_done_when" in [d["code"] for d in diagnostics]
    v1 = alice.get(f"/api/v1/plans/{plan_id}/versions/1").json()
    assert (v1["diagnostics"], v1["has_errors"]) == (diagnostics, not expected.ok)

    # 2. Save a second version that fixes them.
    document = copy.deepcopy(json.loads(source))
    step = document["steps"][0]
    step["tools_allowed"] = ["file_read"]
    step["done_when"] = {
        "description": step["done_when"],
        "required_keys": ["facts"],
        "checks": ["length(facts) > `0`"],
    }
    saved = alice.post(
        f"/api/v1/plans/{plan_id}/versions",
        {"document": document, "note": "verifiable contract, built-in reader"},
        content_type="application/json",
    )
    assert saved.status_code == 201
    assert (saved.json()["number"], saved.json()["parent"]) == (2, 1)
    assert (saved.json()["status"], saved.json()["diagnostics"]) == ("awaiting_approval", [])

    # 3. The author may not approve it; another user does.
    mine = alice.post(f"/api/v1/plans/{plan_id}/versions/2/approve", {}, "application/json")
    assert mine.status_code == 403
    approved = bob.post(
        f"/api/v1/plans/{plan_id}/versions/2/approve", {"comment": "ok to run"}, "application/json"
    )
    assert approved.status_code == 200
    assert (approved.json()["reviewer"], approved.json()["decision"]) == ("approver", "approved")
    assert alice.get(f"/api/v1/plans/{plan_id}").json()["status"] == "approved"

    # 4. The diff and the Mermaid export.
    diff = alice.get(f"/api/v1/plans/{plan_id}/diff?from=1&to=2")
    assert diff.status_code == 200
    assert diff.json() == {
        "plan": plan_id,
        "from": 1,
        "to": 2,
        "added_steps": [],
        "removed_steps": [],
        "changed_steps": [
            {
                "id": "s1",
                "changes": [
                    {
                        "field": "tools_allowed",
                        "before": ["file_search", "sql_read"],
                        "after": ["file_read"],
                        "lines": [
                            "tools_allowed: − file_search",
                            "tools_allowed: − sql_read",
                            "tools_allowed: + file_read",
                        ],
                    },
                    {
                        "field": "done_when",
                        "before": {
                            "description": "合同和采购摘要已形成结构化 facts",
                            "required_keys": [],
                            "checks": [],
                        },
                        "after": {
                            "description": "合同和采购摘要已形成结构化 facts",
                            "required_keys": ["facts"],
                            "checks": ["length(facts) > `0`"],
                        },
                        "lines": [
                            "done_when.required_keys: + facts",
                            "done_when.checks: + length(facts) > `0`",
                        ],
                    },
                ],
            }
        ],
        "added_edges": [],
        "removed_edges": [],
        "plan_changes": [],
    }
    mermaid = alice.get(f"/api/v1/plans/{plan_id}/versions/2/export?format=mermaid")
    assert mermaid.status_code == 200
    assert mermaid.content.decode() == dump_plan(from_data(document), "mermaid")
    assert "\nflowchart TD\n" in mermaid.content.decode()

    # 5. Every action is in the trail, and the trail verifies (walking it is an
    # operator's move; anyone may read the verdict).
    walked = olga.post("/api/v1/audit/verify").json()
    assert (walked["ok"], walked["broken_at"]) == (True, None)
    assert alice.get("/api/v1/audit/verify").json() == walked
    trail = alice.get(f"/api/v1/audit?object_type=plan&object_id={plan_id}").json()
    assert [(e["actor"], e["action"], e["payload"].get("version")) for e in trail["items"]] == [
        ("author", "plan_version.exported", 2),
        ("author", "plan.diffed", None),
        ("approver", "plan_version.approved", 2),
        ("author", "plan_version.superseded", 1),  # v1 waited for review when v2 came
        ("author", "plan_version.created", 2),
        ("author", "plan_version.created", 1),
        ("author", "plan.created", None),
    ]
    assert trail["items"][0]["payload"]["format"] == "mermaid"
    assert trail["items"][1]["payload"] == {"plan": plan_id, "from": 1, "to": 2}
    assert trail["items"][3]["payload"]["superseded_by"] == 2
    assert trail["items"][5]["payload"]["diagnostic_codes"] == sorted(
        {d["code"] for d in diagnostics}
    )
