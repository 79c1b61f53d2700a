"""New plan from a goal: POST /api/v1/plans/generate, the worker's task that asks the
planner, GET /plans/proposals/{id} (progress), POST /plans/proposals/{id}/cancel and the
page, against the project's own OpenAI-compatible test server
(tests/unit/models/openai_fake.py) as FORGE_PLANNER.

Issue 25, item 5: the planner's answer is its author's draft (SPEC section 5: "A
planner's proposal is saved as its author's draft; the author submits it"); asking
answers at once (202) with a proposal that a worker works on, whose progress a person
reads (elapsed time, "attempt 2 of 3: the last answer had a cycle") and may cancel."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from audit.models import AuditEvent
from forge.plan import from_data
from forge.planners import ScriptedPlanner
from plans import planning
from plans.models import PlannerProposal, PlanVersion
from reviews.queue import queue_for
from tests.unit.models.openai_fake import FakeOpenAI, completion, running

from .runs_helpers import drain

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
REPORT = {"id": "report", "description": "Report the supplier risk score", "tool": "echo",
          "args": {"report": "risk 3"}, "depends_on": ["score"],
          "done_when": {"required_keys": ["report"]}}  # fmt: skip
# inspect waits for score, which waits for inspect: a cycle, and only that
CYCLIC = {**GOOD, "steps": [{**GOOD["steps"][0], "depends_on": ["score"]}, GOOD["steps"][1],
                            REPORT]}  # fmt: skip


PLAIN = {key: value for key, value in GOOD.items() if key != "rationale"}


def document(answer: dict[str, Any]) -> Any:
    """An answer as a scripted planner hands it out (a document has no rationale)."""
    return from_data({key: value for key, value in answer.items() if key != "rationale"})


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


def _post(client: Any, path: str, body: dict[str, Any] | None = None) -> Any:
    return client.post(f"/api/v1{path}", body or {}, content_type="application/json")


def _proposal(client: Any, proposal_id: int) -> dict[str, Any]:
    answer = client.get(f"/api/v1/plans/proposals/{proposal_id}")
    assert answer.status_code == 200, answer.json()
    return answer.json()


def _asked_and_answered(client: Any, **body: Any) -> dict[str, Any]:
    """Ask, let a worker answer, and read the proposal as the page does."""
    asked = _generate(client, **body)
    assert asked.status_code == 202, asked.json()
    drain()
    return _proposal(client, asked.json()["id"])


def test_asking_answers_at_once_and_a_worker_makes_version_1_the_authors_draft(
    planner_server, author, api_client
):
    planner_server.reply(json.dumps(GOOD), tokens=1200)
    client = api_client(author)

    asked = _generate(client, context="ACME Bearings", constraints="read only", name="Risk")

    assert asked.status_code == 202, asked.json()
    waiting = asked.json()
    assert (waiting["status"], waiting["attempt"], waiting["max_attempts"]) == ("working", 0, 2)
    assert waiting["progress"] == "waiting for a worker to ask the planner"
    assert waiting["version"] is None and waiting["editor"] is None
    assert not PlanVersion.objects.exists() and planner_server.requests == []

    drain()
    done = _proposal(client, waiting["id"])

    version = PlanVersion.objects.get(plan_id=done["plan"], number=1)
    assert (version.author, version.planner, version.status, version.submitted) == (
        author, "llm:fake-model", "draft", False,
    )  # fmt: skip
    assert version.plan.name == "Risk"
    assert version.note == GOOD["rationale"]
    assert (done["status"], done["version"], done["tokens"]) == ("proposed", 1, 1200)
    assert done["editor"] == f"/plans/{done['plan']}/edit/?version=1"
    assert (done["requested_by"], done["model"]) == ("author", "fake-model")
    assert done["finished_at"] is not None and done["elapsed_seconds"] >= 0
    assert [a["code"] for a in done["attempts"]] == [""]
    asked_text = planner_server.messages(0)[1]["content"]
    assert "Context: ACME Bearings" in asked_text
    assert "Constraints the plan must keep: read only" in asked_text
    audit = AuditEvent.objects.get(action="plan.generated")
    assert (audit.actor, audit.payload["tokens"], audit.payload["status"]) == (
        "author", 1200, "proposed",
    )  # fmt: skip
    assert AuditEvent.objects.get(action="plan.generation_requested").actor == "author"


def test_the_draft_waits_for_its_author_not_in_the_queue_and_not_approvable_until_submitted(
    planner_server, author, approver, api_client
):
    planner_server.reply(json.dumps(GOOD))
    done = _asked_and_answered(api_client(author))
    version = PlanVersion.objects.get(plan_id=done["plan"], number=1)
    path = f"/plans/{done['plan']}/versions/1"

    assert queue_for(approver).versions == []
    refused = _post(api_client(approver), f"{path}/approve")
    assert (refused.status_code, refused.json()["code"]) == (409, "not_submitted")

    submitted = _post(api_client(author), f"/versions/{version.pk}/submit")
    assert submitted.status_code == 200, submitted.json()
    assert submitted.json()["status"] == "awaiting_approval"
    assert [item["key"] for item in queue_for(approver).versions] == [f"version-{version.pk}"]
    own = _post(api_client(author), f"{path}/approve")
    approved = _post(api_client(approver), f"{path}/approve")
    assert own.status_code == 403
    assert approved.status_code == 200, approved.json()


def test_while_the_planner_works_the_proposal_says_which_attempt_and_why_the_last_went_back(
    monkeypatch, settings, author, api_client
):
    settings.FORGE_PLANNER_ATTEMPTS = 3
    client = api_client(author)
    seen: list[dict[str, Any]] = []

    class Watched(ScriptedPlanner):
        def plan(self, task: str, observation: Any) -> Any:
            if self.observations:  # attempt 2 is being asked: what does the page read?
                seen.append(_proposal(client, PlannerProposal.objects.get().pk))
            return super().plan(task, observation)

    planner = Watched([document(CYCLIC), document(GOOD)], name="scripted:watched")
    monkeypatch.setattr(planning, "deployment_planner", lambda: planner)

    done = _asked_and_answered(client)

    [during] = seen
    assert (during["status"], during["attempt"], during["max_attempts"]) == ("working", 2, 3)
    assert during["progress"] == "attempt 2 of 3: the last answer had a cycle"
    assert [a["code"] for a in during["attempts"]] == ["does_not_compile"]
    assert during["elapsed_seconds"] >= 0 and during["finished_at"] is None
    assert done["status"] == "proposed"
    assert [a["code"] for a in done["attempts"]] == ["does_not_compile", ""]


def _cancelling_planner(
    monkeypatch: Any, client: Any, answers: list[dict[str, Any]]
) -> ScriptedPlanner:
    """A planner during whose first answer the person presses Cancel."""

    class Cancelled(ScriptedPlanner):
        def plan(self, task: str, observation: Any) -> Any:
            if not self.observations:
                proposal = PlannerProposal.objects.get().pk
                answer = _post(client, f"/plans/proposals/{proposal}/cancel")
                assert answer.status_code == 200, answer.json()
                assert answer.json()["status"] == "cancelled"
            return super().plan(task, observation)

    planner = Cancelled([document(answer) for answer in answers], name="scripted:cancelled")
    monkeypatch.setattr(planning, "deployment_planner", lambda: planner)
    return planner


def test_cancel_stops_the_planner_between_attempts_and_saves_no_version(
    monkeypatch, settings, author, api_client
):
    settings.FORGE_PLANNER_ATTEMPTS = 3
    client = api_client(author)
    planner = _cancelling_planner(monkeypatch, client, [CYCLIC, GOOD])

    done = _asked_and_answered(client)

    assert len(planner.observations) == 1  # attempt 2 was never asked
    assert (done["status"], done["version"], done["editor"]) == ("cancelled", None, None)
    assert done["progress"] == "cancelled: no plan was saved"
    assert [a["code"] for a in done["attempts"]] == ["does_not_compile"]
    assert not PlanVersion.objects.exists()
    assert AuditEvent.objects.get(action="plan.generation_cancelled").actor == "author"
    assert not AuditEvent.objects.filter(action="plan.generated").exists()


def test_an_answer_that_arrives_after_cancel_is_discarded(monkeypatch, author, api_client):
    client = api_client(author)
    _cancelling_planner(monkeypatch, client, [GOOD])  # its one answer compiles

    done = _asked_and_answered(client)

    assert done["status"] == "cancelled"
    assert not PlanVersion.objects.exists()
    assert not AuditEvent.objects.filter(action="plan.generated").exists()


def test_a_proposal_cancelled_before_a_worker_takes_it_asks_nothing(
    planner_server, author, api_client
):
    client = api_client(author)
    asked = _generate(client).json()

    cancelled = _post(client, f"/plans/proposals/{asked['id']}/cancel")
    again = _post(client, f"/plans/proposals/{asked['id']}/cancel")
    drain()

    assert cancelled.status_code == again.status_code == 200
    assert _proposal(client, asked["id"])["status"] == "cancelled"
    assert planner_server.requests == []
    assert AuditEvent.objects.filter(action="plan.generation_cancelled").count() == 1


def test_cancel_and_progress_of_someone_elses_or_an_unknown_proposal_are_refused(
    planner_server, author, make_user, api_client
):
    bob = make_user("bob", "author", "approver")
    asked = _generate(api_client(author)).json()

    theirs = _post(api_client(bob), f"/plans/proposals/{asked['id']}/cancel")
    peek = api_client(bob).get(f"/api/v1/plans/proposals/{asked['id']}")
    unknown = _post(api_client(author), "/plans/proposals/999999/cancel")
    unknown_get = api_client(author).get("/api/v1/plans/proposals/999999")
    bad = _post(api_client(author), "/plans/proposals/abc/cancel")
    zero = api_client(author).get("/api/v1/plans/proposals/0")

    assert (theirs.status_code, theirs.json()["code"]) == (403, "not_your_proposal")
    assert (peek.status_code, peek.json()["code"]) == (403, "not_your_proposal")
    assert (unknown.status_code, unknown.json()["code"]) == (404, "not_found")
    assert (unknown_get.status_code, unknown_get.json()["code"]) == (404, "not_found")
    assert (bad.status_code, bad.json()["code"]) == (422, "validation_error")
    assert (zero.status_code, zero.json()["code"]) == (422, "validation_error")
    assert PlannerProposal.objects.get().status == "working"


def test_a_finished_proposal_cannot_be_cancelled_and_others_read_it_once_it_made_a_version(
    planner_server, author, make_user, api_client
):
    planner_server.reply(json.dumps(GOOD))
    done = _asked_and_answered(api_client(author))
    bob = make_user("bob", "approver")

    late = _post(api_client(author), f"/plans/proposals/{done['id']}/cancel")
    read = api_client(bob).get(f"/api/v1/plans/proposals/{done['id']}")

    assert (late.status_code, late.json()["code"]) == (409, "proposal_finished")
    assert PlanVersion.objects.filter(plan_id=done["plan"]).count() == 1
    assert read.status_code == 200 and read.json()["version"] == 1


def test_a_task_delivered_twice_asks_once(planner_server, author, api_client):
    from plans.generation import generate_plan

    planner_server.reply(json.dumps(GOOD))
    done = _asked_and_answered(api_client(author))

    generate_plan.call(done["id"])

    assert len(planner_server.requests) == 1
    assert PlanVersion.objects.count() == 1


def test_output_that_does_not_compile_goes_back_and_the_last_attempt_is_kept_with_why(
    planner_server, author, api_client
):
    planner_server.reply(json.dumps(BROKEN), tokens=100)
    planner_server.reply(json.dumps(BROKEN), tokens=100)

    done = _asked_and_answered(api_client(author))

    assert done["status"] == "does_not_compile"
    assert [a["code"] for a in done["attempts"]] == ["does_not_compile"] * 2
    assert all("[unknown_tool]" in a["problems"][0] for a in done["attempts"])
    assert "[unknown_tool]" in planner_server.messages(1)[1]["content"]
    version = PlanVersion.objects.get(plan_id=done["plan"])
    assert version.status == "has_errors"
    assert {d["code"] for d in version.diagnostics} >= {"unknown_tool"}


@pytest.mark.parametrize(
    ("answers", "code"),
    [
        ([(503, {"error": {"message": "overloaded"}})], "model_http_error"),
        ([(200, "not a plan")] * 2, "invalid_plan_output"),
    ],
)
def test_a_planner_that_gives_no_plan_fails_with_its_code_and_the_request_is_kept(
    planner_server, author, api_client, answers, code
):
    for answer_status, body in answers:
        planner_server.respond(answer_status, completion(body) if answer_status == 200 else body)

    done = _asked_and_answered(api_client(author), context="keep this")

    assert (done["status"], done["error_code"]) == ("failed", code)
    assert done["progress"].startswith("the planner proposed no plan")
    proposal = PlannerProposal.objects.get(pk=done["id"])
    assert proposal.context == "keep this"
    assert not PlanVersion.objects.exists()
    assert AuditEvent.objects.filter(action="plan.generation_failed").count() == 1


def test_an_unreachable_planner_fails_with_its_code(settings, author, api_client):
    settings.FORGE_PLANNER = "openai:fake-model"
    settings.FORGE_PLANNER_BASE_URL = "http://127.0.0.1:9/v1"  # nothing listens there

    done = _asked_and_answered(api_client(author))

    assert (done["status"], done["error_code"]) == ("failed", "model_unreachable")


def test_without_a_planner_the_api_and_the_page_say_how_to_set_one(settings, author, client):
    settings.FORGE_PLANNER = ""
    client.force_login(author)

    answer = client.post("/api/v1/plans/generate", {"goal": GOAL}, content_type="application/json")
    page = client.get("/plans/generate/")

    assert answer.status_code == 503
    assert answer.json()["code"] == "planner_not_configured"
    assert not PlannerProposal.objects.exists()
    assert page.status_code == 200
    assert b"FORGE_PLANNER=openai:MODEL" in page.content
    assert b'id="generate-plan"' not in page.content


def test_a_viewer_cannot_ask_for_a_plan(planner_server, make_user, api_client):
    viewer = make_user("vera", "viewer")
    assert _generate(api_client(viewer)).status_code == 403
    assert not PlannerProposal.objects.exists()


def test_the_editor_shows_the_draft_with_the_planners_banner_and_submit_for_review(
    planner_server, author, approver, client, api_client
):
    planner_server.reply(json.dumps(GOOD), tokens=1200)
    done = _asked_and_answered(api_client(author))
    client.force_login(author)

    editor = client.get(done["editor"]).content.decode()

    assert 'id="planner-banner"' in editor
    assert "Made by the planner <code>llm:fake-model</code>" in editor
    assert "for <strong>author</strong>" in editor and "1200 tokens" in editor
    assert GOOD["rationale"] in editor
    assert 'id="planner-draft-note"' in editor
    assert "Nobody is asked to review it until you submit it" in editor
    assert 'id="submit-review-button"' in editor


def test_the_version_page_shows_the_planners_transcript(
    planner_server, author, approver, client, api_client
):
    planner_server.reply(json.dumps(GOOD), tokens=1200)
    done = _asked_and_answered(api_client(author))
    client.force_login(approver)

    page = client.get(f"/plans/{done['plan']}/versions/1/").content.decode()

    assert "Made by the planner <code>llm:fake-model</code>" in page
    assert GOOD["rationale"] in page
    assert 'id="planner-draft-note"' not in page


def test_the_page_lists_the_goals_a_planner_script_knows(settings, author, client, tmp_path):
    script = {
        "answers": [{"example": "Score a supplier", "words": ["supplier"], "plans": [PLAIN]}],
    }
    (tmp_path / "script.json").write_text(json.dumps(script))
    settings.FORGE_PLANNER = f"scripted:{tmp_path / 'script.json'}"
    client.force_login(author)

    page = client.get("/plans/generate/").content.decode()

    assert 'data-goal="Score a supplier"' in page
