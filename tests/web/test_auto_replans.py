"""Automatic replans on workers (``replan: auto``): the planner proposes version N+1 for
the person who started the run, and the gate decides whether the run resumes at once
(``auto_approve_replans: read_only``) or the replan waits for another person."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

import pytest

from audit.models import AuditEvent
from forge.plan import from_data
from plans import services as plan_services
from plans.models import Approval, PlannerProposal, PlanVersion
from reviews.queue import queue_for
from runs import services
from runs.models import Run, RunEvent
from tests.unit.models.openai_fake import FakeOpenAI, running

from .runs_helpers import FAILING_STEPS, FIXED_STEPS, drain

pytestmark = pytest.mark.django_db(transaction=True)

GOAL = "Prepare the supplier risk report"


def plan(steps: list[dict[str, Any]], **fields: Any) -> dict[str, Any]:
    return {"goal": GOAL, "replan": "auto", **fields, "steps": copy.deepcopy(steps)}


FIX = {**plan(FIXED_STEPS), "rationale": "The risk is a percentage over 10: use the scaled 9.0."}


@pytest.fixture
def planner_server(settings: Any) -> Iterator[FakeOpenAI]:
    with running() as server:
        settings.FORGE_PLANNER = "openai:fake-model"
        settings.FORGE_PLANNER_BASE_URL = server.base_url
        settings.FORGE_PLANNER_ATTEMPTS = 2
        yield server


def failing_run(author: Any, approver: Any, operator: Any, **fields: Any) -> Run:
    version = plan_services.create_plan(
        author, "Supplier risk", from_data(plan(FAILING_STEPS, **fields))
    )
    plan_services.approve(version, approver, "looks right")
    run = services.start_run(PlanVersion.objects.get(pk=version.pk), operator)
    drain()
    return Run.objects.get(pk=run.pk)


def test_a_read_only_fix_resumes_the_run_on_the_policys_approval(
    planner_server, read_only_replans, author, approver, operator
):
    planner_server.reply(json.dumps(FIX), tokens=800)

    run = failing_run(author, approver, operator)

    assert run.status == "succeeded"
    v2 = PlanVersion.objects.get(plan=run.plan, number=2)
    assert (v2.parent.number, v2.author, v2.planner) == (1, operator, "llm:fake-model")
    assert "step 'score'" in v2.replan_reason
    assert Approval.objects.get(version=v2).by_policy
    proposal = PlannerProposal.objects.get(run_id=run.pk)
    assert (proposal.kind, proposal.status, proposal.tokens) == ("replan", "proposed", 800)
    assert proposal.version == v2
    told = proposal.attempts[0]["told"]
    assert "Failed step: score" in told and "<tool-data>" in told
    noted = RunEvent.objects.get(run=run, event_type="run_replan_proposed")
    assert (noted.tokens, noted.model, noted.actor) == (800, "fake-model", "llm:fake-model")
    assert noted.facts["on_behalf_of"] == "operator"
    resumed = RunEvent.objects.get(run=run, event_type="run_resumed")
    assert resumed.actor == "policy"
    assert AuditEvent.objects.filter(action="run.replan_proposed").count() == 1


def test_without_the_policy_the_replan_waits_in_the_queue_and_a_second_person_resumes_it(
    planner_server, author, approver, operator, make_user, api_client
):
    planner_server.reply(json.dumps(FIX), tokens=800)
    run = failing_run(author, approver, operator)

    assert run.status == "needs_replan"
    v2 = PlanVersion.objects.get(plan=run.plan, number=2)
    assert v2.status == "awaiting_approval"
    queue = queue_for(approver)
    assert [item["number"] for item in queue.versions] == [2]
    # The person the planner worked for may not approve its version, whatever roles they
    # hold.
    operator.set_roles(["operator", "approver"])
    operator.save()
    own = api_client(operator).post(f"/api/v1/plans/{run.plan_id}/versions/2/approve", {},
                                    content_type="application/json")  # fmt: skip
    assert own.status_code == 403
    assert Run.objects.get(pk=run.pk).status == "needs_replan"

    approved = api_client(approver).post(f"/api/v1/plans/{run.plan_id}/versions/2/approve",
                                         {}, content_type="application/json")  # fmt: skip
    drain()

    assert approved.status_code == 200
    run.refresh_from_db()
    assert run.status == "succeeded"
    assert RunEvent.objects.get(run=run, event_type="run_resumed").actor == "approver"


def test_max_replans_bounds_the_loop_with_a_clear_state(
    planner_server, read_only_replans, author, approver, operator
):
    still_failing = plan(FAILING_STEPS, max_replans=1)
    still_failing["steps"][1]["args"] = {"risk": 12.0}
    planner_server.reply(json.dumps(still_failing))

    run = failing_run(author, approver, operator, max_replans=1)

    assert run.status == "failed"
    assert "used all 1 replan(s)" in run.blocked_reason
    assert PlanVersion.objects.filter(plan=run.plan).count() == 2
    assert len(planner_server.requests) == 1


def test_a_planner_that_gives_no_version_leaves_the_run_to_a_person_and_says_why(
    planner_server, read_only_replans, author, approver, operator
):
    planner_server.reply("I would rather not.")
    planner_server.reply("Still no.")

    run = failing_run(author, approver, operator)

    assert run.status == "needs_replan"
    noted = RunEvent.objects.get(run=run, event_type="run_replan_failed")
    assert "[invalid_plan_output]" in noted.blocked_reason
    proposal = PlannerProposal.objects.get(run_id=run.pk)
    assert (proposal.status, len(proposal.attempts)) == ("failed", 2)
    assert PlanVersion.objects.filter(plan=run.plan).count() == 1


def test_a_plan_without_replan_auto_never_asks_the_planner(
    planner_server, read_only_replans, author, approver, operator
):
    version = plan_services.create_plan(
        author, "Supplier risk", from_data({"goal": GOAL, "steps": FAILING_STEPS})
    )
    plan_services.approve(version, approver, "ok")
    services.start_run(PlanVersion.objects.get(pk=version.pk), operator)
    drain()

    assert Run.objects.get().status == "needs_replan"
    assert planner_server.requests == []
    assert not PlannerProposal.objects.exists()


def test_the_replan_view_shows_what_the_planner_was_told_and_answered(
    planner_server, author, approver, operator, client
):
    planner_server.reply(json.dumps(FIX), tokens=800)
    run = failing_run(author, approver, operator)
    client.force_login(approver)

    page = client.get(f"/runs/{run.pk}/replans/").content.decode()

    assert "Made by the planner <code>llm:fake-model</code>" in page
    assert "for <strong>operator</strong>" in page
    assert "800 tokens" in page
    assert "Failed step: score" in page
    assert FIX["rationale"] in page


def test_the_run_notes_each_stage_of_an_automatic_replan_as_it_happens(
    planner_server, author, approver, operator, api_client
):
    planner_server.reply(json.dumps(FIX), tokens=800)
    run = failing_run(author, approver, operator)

    kinds = list(RunEvent.objects.filter(run=run).values_list("event_type", flat=True))
    assert kinds[-3:] == ["run_needs_replan", "run_replan_started", "run_replan_proposed"]
    started = RunEvent.objects.get(run=run, event_type="run_replan_started")
    assert started.facts == {"planner": "llm:fake-model", "on_behalf_of": "operator"}
    assert started.blocked_reason == "the planner llm:fake-model is working on a replan of v1"
    proposed = RunEvent.objects.get(run=run, event_type="run_replan_proposed")
    assert proposed.facts["version"] == 2
    assert proposed.facts["waits_for"] == {
        "who": "approvers", "author": "operator", "approvers": ["approver"], "more": 0,
        "why": ["the policy asks a person to approve every replan"],
    }  # fmt: skip

    api_client(approver).post(f"/api/v1/plans/{run.plan_id}/versions/2/approve", {},
                              content_type="application/json")  # fmt: skip
    drain()

    kinds = list(RunEvent.objects.filter(run=run).values_list("event_type", flat=True))
    assert kinds[kinds.index("run_replan_proposed") + 1 :][:2] == [
        "run_replan_approved", "run_resumed",
    ]  # fmt: skip
    approved = RunEvent.objects.get(run=run, event_type="run_replan_approved")
    assert (approved.actor, approved.facts) == ("approver", {"version": 2, "approver": "approver"})
    assert Run.objects.get(pk=run.pk).status == "succeeded"


def test_a_read_only_replan_says_the_policy_approves_it(
    planner_server, read_only_replans, author, approver, operator
):
    planner_server.reply(json.dumps(FIX))

    run = failing_run(author, approver, operator)

    proposed = RunEvent.objects.get(run=run, event_type="run_replan_proposed")
    assert proposed.facts["waits_for"] == {"who": "policy", "why": []}
    assert run.status == "succeeded"


def test_the_run_page_starts_from_the_planners_notes_since_the_run_needed_a_replan(
    planner_server, author, approver, operator, client
):
    from .test_run_pages import _page_data

    planner_server.reply(json.dumps(FIX))
    run = failing_run(author, approver, operator)
    client.force_login(operator)

    data = _page_data(client.get(f"/runs/{run.pk}/"))

    assert [e["event_type"] for e in data["replan_notes"]] == [
        "run_replan_started", "run_replan_proposed",
    ]  # fmt: skip
    assert data["replan_notes"][1]["facts"]["waits_for"]["who"] == "approvers"
    assert data["urls"]["milestone"] == f"/review/#milestone-{run.pk}-{{m}}"
