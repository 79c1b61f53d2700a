"""New plan from a goal: POST /api/v1/plans/generate and its page, against the project's
own OpenAI-compatible test server (tests/unit/models/openai_fake.py) as FORGE_PLANNER."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from audit.models import AuditEvent
from plans import services as plan_services
from plans.models import PlannerProposal, PlanVersion
from tests.unit.models.openai_fake import FakeOpenAI, running

GOAL = "Prepare the supplier risk report"
GOOD = {
    "goal": GOAL,
    "rationale": "Collect the facts, then score them: both steps only read.",
    "steps": [
        {"id": "inspect", "description": "Collect the contract facts", "tool": "echo",
         "args": {"facts": ["late"]}, "done_when": {"required_keys": ["facts"]}},
        {"id": "score", "description": "Score the supplier risk", "tool": "echo",
         "args": {"risk": 3}, "depends_on": ["inspect"], "done_when": {"checks": ["risk <= `5`"]}},
    ],
}  # fmt: skip
BROKEN = {**GOOD, "steps": [{**GOOD["steps"][0], "tool": "teleport"}, GOOD["steps"][1]]}


@pytest.fixture
def planner_server(settings: Any) -> Iterator[FakeOpenAI]:
    with running() as server:
        settings.FORGE_PLANNER = "openai:fake-model"
        settings.FORGE_PLANNER_BASE_URL = server.base_url
        settings.FORGE_PLANNER_ATTEMPTS = 2
        yield server


def _generate(client: Any, **body: Any) -> Any:
    return client.post("/api/v1/plans/generate", {"goal": GOAL, **body},
                       content_type="application/json")  # fmt: skip


def test_the_planner_proposes_version_1_authored_by_the_person_who_asked(
    planner_server, author, api_client
):
    planner_server.reply(json.dumps(GOOD), tokens=1200)

    answer = _generate(api_client(author), context="ACME Bearings", constraints="read only")

    assert answer.status_code == 201, answer.json()
    body = answer.json()
    version = PlanVersion.objects.get(plan_id=body["plan"], number=1)
    assert (version.author, version.planner, version.status) == (
        author,
        "llm:fake-model",
        "awaiting_approval",
    )
    assert version.note == GOOD["rationale"]
    assert body["editor"] == f"/plans/{body['plan']}/edit/?version=1"
    proposal = body["proposal"]
    assert (proposal["requested_by"], proposal["status"], proposal["tokens"]) == (
        "author",
        "proposed",
        1200,
    )
    assert proposal["model"] == "fake-model"
    assert [a["code"] for a in proposal["attempts"]] == [""]
    asked = planner_server.messages(0)[1]["content"]
    assert (
        "Context: ACME Bearings" in asked and "Constraints the plan must keep: read only" in asked
    )
    audit = AuditEvent.objects.get(action="plan.generated")
    assert (audit.actor, audit.payload["tokens"], audit.payload["planner"]) == (
        "author",
        1200,
        "llm:fake-model",
    )


def test_the_person_who_asked_cannot_approve_the_planners_version(
    planner_server, author, make_user, api_client
):
    ada = make_user("ada", "author", "approver")
    planner_server.reply(json.dumps(GOOD))
    body = _generate(api_client(ada)).json()

    own = api_client(ada).post(f"/api/v1/plans/{body['plan']}/versions/1/approve", {},
                               content_type="application/json")  # fmt: skip

    assert own.status_code == 403
    assert PlanVersion.objects.get(plan_id=body["plan"]).status == "awaiting_approval"


def test_output_that_does_not_compile_goes_back_and_the_last_attempt_is_kept_with_why(
    planner_server, author, api_client
):
    planner_server.reply(json.dumps(BROKEN), tokens=100)
    planner_server.reply(json.dumps(BROKEN), tokens=100)

    answer = _generate(api_client(author))

    assert answer.status_code == 201
    body = answer.json()
    assert body["status"] == "has_errors"
    assert body["proposal"]["status"] == "does_not_compile"
    assert [a["code"] for a in body["proposal"]["attempts"]] == ["does_not_compile"] * 2
    assert all("[unknown_tool]" in a["problems"][0] for a in body["proposal"]["attempts"])
    assert "[unknown_tool]" in planner_server.messages(1)[1]["content"]
    version = PlanVersion.objects.get(plan_id=body["plan"])
    assert {d["code"] for d in version.diagnostics} >= {"unknown_tool"}


@pytest.mark.parametrize(
    ("answers", "status", "code"),
    [
        ([(503, {"error": {"message": "overloaded"}})] * 1, 502, "model_http_error"),
        ([(200, "not a plan")] * 2, 422, "invalid_plan_output"),
    ],
)
def test_a_planner_that_gives_no_plan_is_a_clear_error_and_the_request_is_kept(
    planner_server, author, api_client, answers, status, code
):
    from tests.unit.models.openai_fake import completion

    for answer_status, body in answers:
        planner_server.respond(answer_status, completion(body) if answer_status == 200 else body)

    answer = _generate(api_client(author), context="keep this")

    assert answer.status_code == status, answer.json()
    assert answer.json()["code"] == code
    proposal = PlannerProposal.objects.get(pk=answer.json()["proposal"])
    assert (proposal.status, proposal.error_code, proposal.context) == ("failed", code, "keep this")
    assert not PlanVersion.objects.exists()
    assert AuditEvent.objects.filter(action="plan.generation_failed").count() == 1
    shown = api_client(author).get(f"/api/v1/plans/proposals/{proposal.pk}").json()
    assert shown["error_code"] == code


def test_an_unreachable_planner_times_out_with_its_code(settings, author, api_client):
    settings.FORGE_PLANNER = "openai:fake-model"
    settings.FORGE_PLANNER_BASE_URL = "http://127.0.0.1:9/v1"  # nothing listens there

    answer = _generate(api_client(author))

    assert answer.status_code == 502
    assert answer.json()["code"] == "model_unreachable"


def test_without_a_planner_the_api_and_the_page_say_how_to_set_one(settings, author, client):
    settings.FORGE_PLANNER = ""
    client.force_login(author)

    answer = client.post("/api/v1/plans/generate", {"goal": GOAL}, content_type="application/json")
    page = client.get("/plans/generate/")

    assert answer.status_code == 503
    assert answer.json()["code"] == "planner_not_configured"
    assert page.status_code == 200
    assert b"FORGE_PLANNER=openai:MODEL" in page.content
    assert b'id="generate-plan"' not in page.content


def test_a_viewer_cannot_ask_for_a_plan(planner_server, make_user, api_client):
    viewer = make_user("vera", "viewer")
    assert _generate(api_client(viewer)).status_code == 403
    assert planner_server.requests == []


def test_the_version_and_editor_pages_show_the_planners_transcript(
    planner_server, author, approver, client
):
    planner_server.reply(json.dumps(GOOD), tokens=1200)
    client.force_login(author)
    body = client.post("/api/v1/plans/generate", {"goal": GOAL},
                       content_type="application/json").json()  # fmt: skip
    plan_services.approve(PlanVersion.objects.get(plan_id=body["plan"]), approver, "ok")

    editor = client.get(body["editor"]).content.decode()
    version = client.get(f"/plans/{body['plan']}/versions/1/").content.decode()

    for page in (editor, version):
        assert "Made by the planner <code>llm:fake-model</code>" in page
        assert "for <strong>author</strong>" in page
        assert "1200 tokens" in page
        assert GOOD["rationale"] in page
