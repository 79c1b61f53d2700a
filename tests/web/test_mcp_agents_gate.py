"""The four-eyes matrix through Forge's MCP tools at /mcp: an agent is the author of what it
submits, through its API token's user, so it can neither approve it nor run it until
another person approved exactly that version; starting an unfit version through the
start_run tool is refused with the gate's code and nothing reaches a runner. Driven by
the MCP SDK's own client session over streamable HTTP, in-process.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from accounts import teams
from audit.models import AuditEvent
from plans import services as plan_services
from plans.models import Plan, PlanVersion
from runs.models import Run

from . import test_gate
from .mcp_helpers import answer, call, conversation
from .runs_helpers import drain
from .test_gate import IDS, UNFIT, document

# The matrix's own fixture: every call that reaches a runner, counted.
runner_calls = test_gate.runner_calls

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def agent(make_user: Any) -> Any:
    """An agent's user holding every role a plan's life needs, approving included."""
    return make_user("agent", "author", "approver", "operator")


def submit(token: str) -> dict[str, Any]:
    return answer(call(token, "submit_plan", {"name": "Supplier risk", "document": document()}))


def test_an_agent_is_the_author_of_what_it_submits_and_cannot_approve_it(
    agent, token_for, api_client
):
    submitted = submit(token_for(agent))
    plan_id, number = submitted["plan_id"], submitted["version"]

    own = api_client(agent).post(
        f"/api/v1/plans/{plan_id}/versions/{number}/approve",
        {"comment": "fine by me"},
        content_type="application/json",
    )

    assert (submitted["status"], submitted["author"]) == ("awaiting_approval", "agent")
    assert (own.status_code, own.json()) == (
        403,
        {"detail": "Authors cannot approve their own versions", "code": "permission_denied"},
    )
    version = PlanVersion.objects.get(plan_id=plan_id, number=number)
    assert (version.author.username, version.status) == ("agent", "awaiting_approval")
    assert not version.approvals.exists()
    created = AuditEvent.objects.get(action="plan_version.created")
    assert (created.actor, created.payload["status"]) == ("agent", "awaiting_approval")


def test_an_agent_cannot_start_its_unapproved_plan_and_nothing_runs(agent, token_for, runner_calls):
    token = token_for(agent)
    submitted = submit(token)
    ids = {"plan_id": submitted["plan_id"], "version": submitted["version"]}

    waited = answer(call(token, "wait_for_approval", {**ids, "timeout_s": 0}))
    started = call(token, "start_run", ids)
    drain()

    assert (waited["timed_out"], waited["status"]) == (True, "awaiting_approval")
    assert started.is_error
    assert answer(started)["error"] == {
        "status": 409,
        "code": "not_approved",
        "detail": "version 1 is awaiting_approval; only an approved version can be run",
    }
    assert not Run.objects.exists()
    assert runner_calls == []
    assert not AuditEvent.objects.filter(action="run.started").exists()


def test_once_another_person_approves_the_waiting_agent_starts_the_run_and_reads_it_to_the_end(
    agent, approver, token_for, api_client, runner_calls
):
    token = token_for(agent)
    submitted = submit(token)
    ids = {"plan_id": submitted["plan_id"], "version": submitted["version"]}
    reviewer = api_client(approver)

    def approve() -> int:
        return reviewer.post(
            f"/api/v1/plans/{ids['plan_id']}/versions/1/approve",
            {"comment": "checked the report path"},
            content_type="application/json",
        ).status_code

    async def talk(client: Any) -> tuple[Any, ...]:
        approved: list[int] = []

        async def approve_soon() -> None:
            await anyio.sleep(0.3)  # the agent is waiting by now
            approved.append(await anyio.to_thread.run_sync(approve))

        async with anyio.create_task_group() as group:
            group.start_soon(approve_soon)
            waited = await client.call_tool("wait_for_approval", {**ids, "timeout_s": 30})
        started = await client.call_tool("start_run", ids)
        await anyio.to_thread.run_sync(drain)
        run_id = answer(started)["run_id"]
        events = await client.call_tool("run_events", {"run_id": run_id, "after": 0})
        run = await client.call_tool("get_run", {"run_id": run_id})
        return approved, waited, started, events, run

    approved, waited, started, events, run = conversation(token, talk)

    assert approved == [200]
    decided = answer(waited)
    assert (decided["timed_out"], decided["status"]) == (False, "approved")
    assert decided["decision"]["reviewer"] == "approver"
    assert 0.3 <= decided["waited_s"] < 30  # it waited for the person, then no longer
    assert not started.is_error
    seqs = [event["seq"] for event in answer(events)["events"]]
    assert seqs == list(range(1, len(seqs) + 1))
    assert answer(events)["events"][-1]["event_type"] == "run_succeeded"
    assert (answer(run)["status"], answer(run)["finished"]) == ("succeeded", True)
    assert [step for _, step in runner_calls] == ["inspect", "score", "publish"]
    audit = AuditEvent.objects.get(action="run.started")
    assert (audit.actor, audit.payload["approved_by"]) == ("agent", "approver")


@pytest.mark.parametrize(("make", "code"), UNFIT, ids=IDS)
def test_starting_an_unfit_version_through_mcp_is_refused_with_the_gates_code(
    make, code, author, approver, operator, make_user, token_for, runner_calls
):
    version = make(None, author, approver, make_user)

    started = call(token_for(operator), "start_run", {"plan_id": version.plan_id, "version": 1})
    drain()

    assert started.is_error
    refused = answer(started)["error"]
    assert (refused["status"], refused["code"]) == (409, code)
    assert not Run.objects.exists()
    assert runner_calls == []


def test_a_viewers_token_reads_through_mcp_but_submits_and_starts_nothing(
    viewer, approved_version, token_for, runner_calls
):
    token = token_for(viewer)
    ids = {"plan_id": approved_version.plan_id, "version": approved_version.number}

    status = answer(call(token, "plan_status", ids))
    submitted = call(token, "submit_plan", {"name": "Mine", "document": document()})
    started = call(token, "start_run", ids)

    assert status["status"] == "approved"
    assert [answer(r)["error"]["code"] for r in (submitted, started)] == [
        "permission_denied",
        "permission_denied",
    ]
    assert Plan.objects.count() == 1
    assert not Run.objects.exists()
    assert runner_calls == []


WRITES_NEED_FINANCE = """\
schema: forge.rules/v1
rules:
  - id: writes
    when: {side_effect: [write]}
    require: {team: finance}
"""


def test_under_approval_rules_an_agent_learns_what_its_plan_waits_for_and_cannot_start_it(
    agent, approver, make_user, token_for, runner_calls, approval_rules
):
    approval_rules(WRITES_NEED_FINANCE)
    carol = make_user("carol", "approver")
    teams.join_teams(carol, ["finance"], actor="test")
    token = token_for(agent)
    submitted = submit(token)
    ids = {"plan_id": submitted["plan_id"], "version": submitted["version"]}
    version = PlanVersion.objects.get(plan_id=ids["plan_id"], number=ids["version"])
    plan_services.approve(version, approver, "fine by me")  # counts toward no rule

    waited = answer(call(token, "wait_for_approval", {**ids, "timeout_s": 0}))
    started = call(token, "start_run", ids)

    assert (waited["timed_out"], waited["status"]) == (True, "awaiting_approval")
    assert waited["next"] == (
        "A person must decide (rule writes needs 1 of finance): call wait_for_approval with "
        f"plan_id={ids['plan_id']}, version=1."
    )
    assert (started.is_error, answer(started)["error"]["code"]) == (True, "not_approved")
    assert not Run.objects.exists()

    plan_services.approve(version, carol, "finance agrees")
    started = answer(call(token, "start_run", ids))
    drain()
    assert Run.objects.get(pk=started["run_id"]).status == "succeeded"
