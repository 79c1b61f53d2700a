"""Every JSON the API reads is read strictly, as the CLI reads a plan file: absurd nesting
is a 400 ``document_too_deep`` (never a 500), a repeated key a 400 ``duplicate_key``
(never "the last one wins"), and ``NaN`` a 400 ``invalid_json``; nothing is saved. How
fast the refusals are is ``bench.import_limits``' business (a few milliseconds), not a
timed test's."""

from __future__ import annotations

import json

import pytest

from plans.models import Plan

pytestmark = pytest.mark.django_db

LEVELS = 100_000
DEEP_ARGS = '{"a":' * LEVELS + "1" + "}" * LEVELS
PLAN = {"goal": "g", "steps": [{"id": "a", "description": "Echo it", "tool": "echo"}]}


def _with_deep_args() -> str:
    text = json.dumps({**PLAN, "steps": [{**PLAN["steps"][0], "args": "__deep__"}]})
    return text.replace('"__deep__"', DEEP_ARGS)


def _post(client, path: str, body: str):
    return client.post(path, body, content_type="application/json")


@pytest.mark.parametrize("path", ["/api/v1/compile", "/api/v1/plans"])
def test_a_deep_plan_given_as_source_text_is_a_400_not_a_500(api_client, author, path):
    body = json.dumps({"name": "Deep", "format": "json", "source": _with_deep_args()})

    response = _post(api_client(author), path, body)

    assert response.status_code == 400, response.content[:300]
    assert response.json()["code"] == "document_too_deep"
    assert "max_depth" in response.json()["detail"]
    assert Plan.objects.count() == 0


@pytest.mark.parametrize("path", ["/api/v1/compile", "/api/v1/plans"])
def test_a_deep_document_in_the_body_itself_is_a_400_not_a_500(api_client, author, path):
    body = '{"name": "Deep", "document": ' + _with_deep_args() + "}"

    response = _post(api_client(author), path, body)

    assert response.status_code == 400, response.content[:300]
    assert response.json()["code"] == "document_too_deep"
    assert Plan.objects.count() == 0


def test_a_deep_body_on_any_other_endpoint_is_a_400_too(api_client, author):
    body = '{"name": ' + "[" * LEVELS + "]" * LEVELS + "}"

    response = _post(api_client(author), "/api/v1/tokens", body)

    assert response.status_code == 400
    assert response.json()["code"] == "document_too_deep"


@pytest.mark.parametrize("path", ["/api/v1/compile", "/api/v1/plans"])
def test_a_document_with_a_repeated_key_is_refused_as_the_cli_refuses_it(api_client, author, path):
    body = (
        '{"name": "Twice", "document": {"goal": "first", "goal": "second", '
        '"steps": [{"id": "a", "tool": "echo", "description": "Echo it"}]}}'
    )

    response = _post(api_client(author), path, body)

    assert response.status_code == 400
    assert response.json()["code"] == "duplicate_key"
    assert "'goal'" in response.json()["detail"]
    assert Plan.objects.count() == 0


def test_a_repeated_key_anywhere_in_a_body_is_refused(api_client, author, make_plan):
    version = make_plan(author)
    body = '{"document": {"goal": "g", "steps": []}, "note": "one", "note": "two"}'

    response = _post(api_client(author), f"/api/v1/plans/{version.plan_id}/versions", body)

    assert response.status_code == 400
    assert response.json()["code"] == "duplicate_key"
    assert version.plan.versions.count() == 1


def test_nan_in_a_body_is_invalid_json(api_client, author):
    body = '{"document": {"goal": "g", "budget": {"max_cost": NaN}, "steps": []}}'

    response = _post(api_client(author), "/api/v1/compile", body)

    assert response.status_code == 400
    assert response.json()["code"] == "invalid_json"


def test_a_body_that_is_not_json_is_still_a_400_invalid_json(api_client, author):
    response = _post(api_client(author), "/api/v1/compile", '{"document": ')

    assert response.status_code == 400
    assert response.json()["code"] == "invalid_json"
