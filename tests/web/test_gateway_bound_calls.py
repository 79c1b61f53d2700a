"""Bound calls through the gateway (SPEC section 11): a run started with executor
"agent" is executed by the agent, which calls each MCP tool step itself through
/mcp/gateway, naming the run and step in the call's _meta. Forge refuses a step before its
dependency, another tool and other arguments than approved (values from earlier steps
resolved by Forge), forwards the approved call once to the real ledger server, stores the
answer as the step's output, checks done_when, lets its workers run the built-in steps,
and refuses a call of a version the gate no longer clears. The agent is the MCP SDK's own
client session; nothing of either side is mocked."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from django.utils import timezone

from audit.models import AuditEvent
from forge.gateway.binding import BoundCall
from gateway import services
from plans.models import PlanVersion
from runs import engine, execution, worker
from runs.models import Run, RunEvent, StepRun

from . import mcp_servers
from .mcp_helpers import answer, conversation
from .mcp_servers import approved, deploy_ledger
from .runs_helpers import drain

pytestmark = pytest.mark.django_db(transaction=True)

GATEWAY = "/mcp/gateway"
LOOK = {**mcp_servers.LOOK, "done_when": {"required_keys": ["entries"]}}
NOTE = {
    "id": "note",
    "description": "Note the rent the ledger holds",
    "tool": "echo",
    "args": {"rent": {"$from": "look", "path": "entries.rent"}},
    "depends_on": ["look"],
}
# After the note, and checked: the recorded key is the one approved.
COPY = {
    **mcp_servers.COPY,
    "depends_on": ["note"],
    "done_when": {"required_keys": ["recorded"], "checks": ["recorded == 'rent_checked'"]},
}


@pytest.fixture
def ledger(settings, tmp_path):
    yield from deploy_ledger(settings, tmp_path)


@pytest.fixture
def agent(make_user: Any) -> Any:
    """The agent's user: it starts runs and executes them."""
    return make_user("agent", "operator")


def start(client: Any, version: Any, executor: str = "agent") -> int:
    started = client.post(
        "/api/v1/runs",
        {"plan_id": version.plan_id, "version": version.number, "executor": executor},
        content_type="application/json",
    )
    assert started.status_code == 201, started.json()
    assert started.json()["executor"] == executor
    return int(started.json()["id"])


def calls(token: str, *made: tuple[str, dict[str, Any], dict[str, Any] | None]) -> list[Any]:
    """Each ``(tool, arguments, _meta)`` called in turn in one gateway session."""

    async def talk(client: Any) -> list[Any]:
        return [await client.call_tool(tool, args, meta=meta) for tool, args, meta in made]

    return conversation(token, talk, path=GATEWAY)


def bound(run_id: int, step: str) -> dict[str, Any]:
    return {"forge/run": run_id, "forge/step": step}


def error(result: Any) -> dict[str, Any]:
    assert result.is_error, result.content
    return answer(result)["error"]


def steps(run_id: int) -> dict[str, str]:
    return dict(StepRun.objects.filter(run_id=run_id).values_list("step_id", "status"))


def test_the_agent_executes_its_run_step_by_step_and_each_call_reaches_the_server_once(
    ledger, author, approver, agent, api_client, token_for
):
    version = approved(author, approver, [LOOK, NOTE, COPY])
    run_id = start(api_client(agent), version)
    token = token_for(agent)
    drain()  # a worker takes nothing of the agent's

    assert steps(run_id) == {"look": "ready", "note": "pending", "copy": "pending"}
    shown = api_client(agent).get(f"/api/v1/runs/{run_id}").json()
    assert (shown["executor"], shown["agent_steps"]) == ("agent", ["look", "copy"])
    early, other_tool, other_args = calls(
        token,
        ("ledger.record_entry", {"key": "rent_checked", "amount": 900}, bound(run_id, "copy")),
        ("ledger.delete_entry", {"key": "rent"}, bound(run_id, "look")),
        ("ledger.list_entries", {"all": True}, bound(run_id, "look")),
    )
    assert error(early) == {
        "status": 409,
        "code": "step_not_ready",
        "detail": f"step 'copy' of run {run_id} is pending, not ready: its dependencies "
        "have not all succeeded",
    }
    assert error(other_tool)["code"] == "not_in_plan"
    assert error(other_tool)["detail"] == (
        f"step 'look' of run {run_id} calls 'ledger.list_entries', not 'ledger.delete_entry'"
    )
    assert error(other_args)["code"] == "args_mismatch"
    assert ledger.calls() == []  # nothing was forwarded

    [looked, again] = calls(
        token,
        ("ledger.list_entries", {}, bound(run_id, "look")),
        ("ledger.list_entries", {}, bound(run_id, "look")),
    )

    assert not looked.is_error
    assert looked.structured_content == {"entries": {"rent": 900, "fees": 40}}
    assert looked.meta == {"forge/step_status": "succeeded", "forge/run_status": "running"}
    assert error(again)["code"] == "step_done"
    assert ledger.calls() == [{"tool": "list_entries", "args": {}}]
    assert StepRun.objects.get(run_id=run_id, step_id="look").output == {
        "entries": {"rent": 900, "fees": 40}
    }

    drain()  # the built-in step is the workers'
    assert steps(run_id) == {"look": "succeeded", "note": "succeeded", "copy": "ready"}

    # $from resolved by Forge: the approved amount is the rent the ledger answered
    [wrong, right] = calls(
        token,
        ("ledger.record_entry", {"key": "rent_checked", "amount": 999}, bound(run_id, "copy")),
        ("ledger.record_entry", {"amount": 900, "key": "rent_checked"}, bound(run_id, "copy")),
    )

    assert error(wrong)["code"] == "args_mismatch"
    assert not right.is_error, right.content
    assert right.structured_content == {"recorded": "rent_checked"}
    assert right.meta == {"forge/step_status": "succeeded", "forge/run_status": "succeeded"}
    assert ledger.entries() == {"rent": 900, "fees": 40, "rent_checked": 900}
    assert [call["tool"] for call in ledger.calls()] == ["list_entries", "record_entry"]
    run = Run.objects.get(pk=run_id)
    assert run.status == "succeeded"
    kinds = list(
        RunEvent.objects.filter(run_id=run_id, step_id="copy").values_list("event_type", flat=True)
    )
    assert kinds == ["step_ready", "step_started", "step_succeeded"]
    audited = [
        (event.action, event.payload["step"], event.payload.get("code"))
        for event in AuditEvent.objects.filter(action__startswith="gateway.").order_by("seq")
    ]
    assert audited == [
        ("gateway.call_refused", "copy", "step_not_ready"),
        ("gateway.call_refused", "look", "not_in_plan"),
        ("gateway.call_refused", "look", "args_mismatch"),
        ("gateway.call_forwarded", "look", None),
        ("gateway.call_answered", "look", None),
        ("gateway.call_refused", "look", "step_done"),
        ("gateway.call_refused", "copy", "args_mismatch"),
        ("gateway.call_forwarded", "copy", None),
        ("gateway.call_answered", "copy", None),
    ]


def test_a_call_of_a_version_the_gate_no_longer_clears_is_refused_and_nothing_is_forwarded(
    ledger, author, approver, agent, api_client, token_for
):
    version = approved(author, approver, [LOOK, NOTE, COPY])
    run_id = start(api_client(agent), version)
    changed = copy.deepcopy(version.document)
    changed["steps"][0]["description"] = "List every ledger entry, and more"
    PlanVersion.objects.filter(pk=version.pk).update(document=changed)
    engine._SCHEDULERS.clear()  # a process that reads the version as it is now
    engine._GRAPHS.clear()

    [refused] = calls(token_for(agent), ("ledger.list_entries", {}, bound(run_id, "look")))

    assert error(refused)["code"] == "not_approved"
    assert "content_changed" in error(refused)["detail"]
    assert ledger.calls() == []
    run = Run.objects.get(pk=run_id)
    assert run.status == "failed"
    assert "content_changed" in run.blocked_reason


def test_a_run_of_the_workers_takes_no_call_from_an_agent(
    ledger, author, approver, agent, api_client, token_for
):
    version = approved(author, approver, [LOOK])
    run_id = start(api_client(agent), version, executor="worker")

    [refused] = calls(token_for(agent), ("ledger.list_entries", {}, bound(run_id, "look")))

    assert error(refused)["code"] == "run_not_agent"


def test_only_the_user_who_started_the_run_executes_it(
    ledger, author, approver, agent, make_user, api_client, token_for
):
    version = approved(author, approver, [LOOK])
    run_id = start(api_client(agent), version)
    other = make_user("mallory", "operator")

    [refused] = calls(token_for(other), ("ledger.list_entries", {}, bound(run_id, "look")))

    assert error(refused) == {
        "status": 403,
        "code": "permission_denied",
        "detail": f"run {run_id} was started by another user: only its starter's agent executes it",
    }
    assert ledger.calls() == []
    assert steps(run_id) == {"look": "ready"}


def test_the_mcp_start_run_tool_starts_a_run_for_the_agent(
    ledger, author, approver, agent, token_for
):
    version = approved(author, approver, [LOOK])

    async def talk(client: Any) -> Any:
        return await client.call_tool(
            "start_run", {"plan_id": version.plan_id, "version": 1, "executor": "agent"}
        )

    started = answer(conversation(token_for(agent), talk))

    assert started["executor"] == "agent"
    assert started["next"].startswith("Execute step(s) look through Forge's gateway")
    assert Run.objects.get(pk=started["run_id"]).executor == "agent"


DROP = {
    "id": "drop",
    "description": "Delete the rent entry from the ledger",
    "tool": "ledger.delete_entry",
    "args": {"key": "rent"},
    "depends_on": ["look"],
}


def test_a_step_that_needs_approval_waits_for_a_person_then_takes_the_agents_call(
    ledger, author, approver, agent, api_client, token_for
):
    version = approved(author, approver, [LOOK, DROP])
    run_id = start(api_client(agent), version)
    token = token_for(agent)
    calls(token, ("ledger.list_entries", {}, bound(run_id, "look")))

    [waiting] = calls(token, ("ledger.delete_entry", {"key": "rent"}, bound(run_id, "drop")))
    assert error(waiting) == {
        "status": 409,
        "code": "step_not_ready",
        "detail": f"step 'drop' of run {run_id} is awaiting_approval, not ready: it waits "
        "for a person's approval",
    }
    decided = api_client(approver).post(
        f"/api/v1/runs/{run_id}/steps/drop/approve", {"comment": "rent is settled"},
        content_type="application/json",
    )  # fmt: skip
    assert decided.status_code == 200, decided.json()

    [dropped] = calls(token, ("ledger.delete_entry", {"key": "rent"}, bound(run_id, "drop")))

    assert dropped.structured_content == {"deleted": "rent", "existed": True}
    assert ledger.entries() == {"fees": 40}
    assert Run.objects.get(pk=run_id).status == "succeeded"


def test_a_web_process_lost_between_forwarding_and_storing_the_answer_leaves_the_step_to_a_person(
    ledger, author, approver, agent, api_client, token_for, monkeypatch
):
    version = approved(author, approver, [LOOK, DROP])
    run_id = start(api_client(agent), version)
    token = token_for(agent)
    calls(token, ("ledger.list_entries", {}, bound(run_id, "look")))
    api_client(approver).post(
        f"/api/v1/runs/{run_id}/steps/drop/approve", {}, content_type="application/json"
    )

    def dies(*args: Any, **kwargs: Any) -> None:
        raise SystemExit("the web process died before the answer was stored")

    monkeypatch.setattr(services, "finish", dies)
    with pytest.raises(SystemExit):
        services.call_bound(
            agent, BoundCall(run_id, "drop"), "ledger.delete_entry", {"key": "rent"}
        )
    monkeypatch.undo()
    execution.take_pending_records()  # what the process held in memory died with it

    assert [call["tool"] for call in ledger.calls()] == ["list_entries", "delete_entry"]
    assert steps(run_id)["drop"] == "running"
    StepRun.objects.filter(run_id=run_id, step_id="drop").update(lease_expires_at=timezone.now())
    assert worker.reap_expired_leases() == 1

    [again] = calls(token, ("ledger.delete_entry", {"key": "rent"}, bound(run_id, "drop")))

    assert steps(run_id)["drop"] == "needs_reconciliation"
    assert error(again)["code"] == "step_not_ready"
    assert [call["tool"] for call in ledger.calls()] == ["list_entries", "delete_entry"]
