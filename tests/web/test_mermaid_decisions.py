"""A Mermaid decision imported on the web (issue 25, item 8): ``POST /compile`` and
``POST /plans`` with Mermaid source answer a ``flattened_decision`` warning among the
diagnostics, naming the decision and its branches; the version keeps it (the version
page, the review queue and the editor read it there), and each branch's label is kept in
its step's description."""

from __future__ import annotations

import pytest

from plans.models import PlanVersion

pytestmark = pytest.mark.django_db

CHART = """\
flowchart TD
    fetch[Fetch the supplier record] --> check{Is the record complete?}
    check -->|yes| score[Score the supplier]
    check -->|no| ask[Ask the supplier for the missing data]
"""
MESSAGE = (
    "decision 'check' (\"Is the record complete?\") is imported as an ordinary step: a plan "
    "has no conditions, so both of its branches run after it: 'score' (yes) and 'ask' (no)"
)


def _post(client, path, body):
    return client.post(path, body, content_type="application/json")


def _flattened(diagnostics):
    return [d for d in diagnostics if d["code"] == "flattened_decision"]


def test_compile_answers_the_flattened_decision_among_the_diagnostics(api_client, author):
    answer = _post(api_client(author), "/api/v1/compile", {"source": CHART, "format": "mermaid"})

    assert answer.status_code == 200
    [warning] = _flattened(answer.json()["diagnostics"])
    assert warning["severity"] == "warning"
    assert warning["message"] == MESSAGE
    assert warning["nodes"] == ["check", "score", "ask"]
    assert warning["edges"] == [["check", "score"], ["check", "ask"]]
    assert warning["hint"].startswith("keep the branch that should run")


def test_a_document_compiled_as_json_has_no_import_warning(api_client, author):
    document = {"goal": "g", "steps": [{"id": "check", "description": "Is it complete?"}]}

    answer = _post(api_client(author), "/api/v1/compile", {"document": document})

    assert _flattened(answer.json()["diagnostics"]) == []


def test_a_plan_imported_from_mermaid_keeps_the_warning_and_the_branch_labels(api_client, author):
    answer = _post(
        api_client(author),
        "/api/v1/plans",
        {"name": "Supplier check", "source": CHART, "format": "mermaid"},
    )

    assert answer.status_code == 201, answer.json()
    latest = answer.json()["latest_version"]
    [warning] = _flattened(latest["diagnostics"])
    assert warning["message"] == MESSAGE
    version = PlanVersion.objects.get(pk=latest["id"])
    assert [d["code"] for d in _flattened(version.diagnostics)] == ["flattened_decision"]
    descriptions = {s["id"]: s["description"] for s in version.document["steps"]}
    assert descriptions["score"] == "Score the supplier (if Is the record complete?: yes)"
    assert descriptions["ask"] == (
        "Ask the supplier for the missing data (if Is the record complete?: no)"
    )


def test_a_new_version_from_mermaid_source_keeps_its_warning_too(api_client, author):
    created = _post(
        api_client(author), "/api/v1/plans", {"name": "Check", "source": CHART, "format": "mermaid"}
    ).json()

    answer = _post(
        api_client(author),
        f"/api/v1/plans/{created['id']}/versions",
        {"source": CHART.replace("yes", "complete"), "format": "mermaid"},
    )

    assert answer.status_code == 201, answer.json()
    [warning] = _flattened(answer.json()["diagnostics"])
    assert "'score' (complete)" in warning["message"]
