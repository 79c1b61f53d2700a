"""The deployment's toolbox on the web: MCP servers configured by FORGE_MCP_SERVERS are
in the catalogue (GET /tools, with their schemas and side effects), compile, preview,
wait for approval and run on the worker; a server that does not answer is a diagnostic
naming it; an admin can ask the servers again. Real servers: the ledger server of
tests/fixtures and mcp-server-time from PyPI."""

from __future__ import annotations

from typing import Any

import pytest

from audit.models import AuditEvent
from plans import compilation
from plans.checks import mcp_servers_check
from runs import services as run_services
from runs.models import StepRun
from tests.fixtures.ledger import Ledger, mcp_servers_file, time_entry

from .mcp_servers import DROP, LOOK, approved, deploy, deploy_ledger
from .runs_helpers import drain

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def ledger(settings, tmp_path):
    yield from deploy_ledger(settings, tmp_path)


def _post(client: Any, path: str, body: dict[str, Any] | None = None) -> Any:
    return client.post(f"/api/v1{path}", body or {}, content_type="application/json")


def catalogue(client: Any) -> dict[str, dict[str, Any]]:
    answer = client.get("/api/v1/tools")
    assert answer.status_code == 200, answer.content
    return {tool["name"]: tool for tool in answer.json()["items"]}


# --- The catalogue ------------------------------------------------------------------------


def test_get_tools_lists_each_mcp_tool_with_its_schema_and_annotated_side_effect(
    ledger, viewer, api_client
):
    tools = catalogue(api_client(viewer))

    assert tools["ledger.delete_entry"] == {
        "name": "ledger.delete_entry",
        "description": "Delete an entry for good.",
        "args_schema": {
            # MCP's default dialect, said so that its keywords are enforced
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "properties": {"key": {"title": "Key", "type": "string"}},
            "required": ["key"],
            "title": "delete_entryArguments",
        },
        "permission_scope": "mcp.ledger",
        "side_effect": "delete",
        "idempotent": False,
        "risk": "high",
        "default_timeout_s": 30.0,
        "source": "mcp:ledger",
        # the server's outputSchema: what $from paths into its output are checked against
        "output_schema": {
            "additionalProperties": True,
            "title": "delete_entryDictOutput",
            "type": "object",
        },
        "echoes_args": False,
        "allowed": True,
        "requires_approval": True,
        "policy_reasons": [
            "tool 'ledger.delete_entry' is high risk",
            "delete side effects always need a person's approval",
        ],
    }
    reading = {name: (t["side_effect"], t["risk"]) for name, t in tools.items() if "." in name}
    assert reading == {
        "ledger.delete_entry": ("delete", "high"),
        "ledger.list_entries": ("read", "low"),
        "ledger.record_entry": ("write", "medium"),
    }
    assert {"echo", "file_write", "http_request"} <= set(tools)


def test_the_servers_endpoint_says_which_server_answered_and_why_one_did_not(
    ledger, viewer, api_client
):
    answer = api_client(viewer).get("/api/v1/tools/servers")

    assert answer.status_code == 200
    servers = {server.pop("name"): server for server in answer.json()}
    for server in servers.values():
        assert server.pop("checked_at")
    assert servers["ledger"] == {
        "transport": "stdio",
        "available": True,
        "error": "",
        "tools": ["ledger.delete_entry", "ledger.list_entries", "ledger.record_entry"],
    }
    gone = servers["gone"]
    assert (gone["available"], gone["tools"]) == (False, [])
    assert gone["error"].startswith("MCP server 'gone' did not start (")
    assert "the gone server is offline" in gone["error"]
    assert "python3" not in answer.content.decode()  # never the command


def test_the_editor_page_hands_the_catalogue_to_the_editor_from_the_same_api(
    ledger, author, client
):
    client.force_login(author)

    tools = client.get("/api/v1/tools").json()["items"]

    assert "ledger.delete_entry" in {tool["name"] for tool in tools}


# --- Compile ------------------------------------------------------------------------------


def test_a_plan_using_mcp_tools_compiles_and_says_which_step_will_wait(ledger, author, api_client):
    document = {"goal": "Close the rent account in the ledger", "steps": [LOOK, DROP]}

    answer = _post(api_client(author), "/compile", {"document": document})

    assert answer.status_code == 200
    body = answer.json()
    assert body["ok"] is True
    assert [d for d in body["diagnostics"] if d["code"] == "approval_required"] == [
        {
            "code": "approval_required",
            "severity": "info",
            "message": "step 'drop' will wait for approval: tool 'ledger.delete_entry' is high "
            "risk; delete side effects always need a person's approval",
            "nodes": ["drop"],
            "edges": [],
        }
    ]


def test_a_server_that_does_not_answer_is_a_diagnostic_naming_it_not_a_crash(
    ledger, author, api_client
):
    ask = {"id": "ask", "description": "Ask the offline server", "tool": "gone.anything",
           "depends_on": ["look"]}  # fmt: skip
    document = {"goal": "Close the rent account in the ledger", "steps": [LOOK, ask]}

    answer = _post(api_client(author), "/compile", {"document": document})

    assert answer.status_code == 200
    errors = [d for d in answer.json()["diagnostics"] if d["severity"] == "error"]
    assert len(errors) == 1, errors
    [problem] = errors
    assert (problem["code"], problem["nodes"]) == ("tool_unavailable", ["ask"])
    assert problem["message"].startswith(
        "step 'ask' uses tool 'gone.anything' of MCP server 'gone', which is not available: "
        "MCP server 'gone' did not start ("
    )


def test_a_bad_servers_file_stops_the_process_naming_the_setting(settings, tmp_path):
    from django.core.exceptions import ImproperlyConfigured

    bad = tmp_path / "bad.json"
    bad.write_text('{"mcpServers": {"x": {"command": "y", "autoApprove": ["z"]}}}')
    settings.FORGE_MCP_SERVERS = str(bad)

    with pytest.raises(ImproperlyConfigured) as caught:
        compilation.compiler()

    assert str(caught.value) == (
        f"FORGE_MCP_SERVERS: MCP servers file {bad}: server 'x': unknown field(s) autoApprove "
        "(Forge takes approvals from its policy, never from this file)"
    )


# --- Runs ---------------------------------------------------------------------------------


def test_mcp_steps_that_need_no_person_run_on_the_worker(ledger, author, approver, operator):
    record = {"id": "add", "description": "Record the tax in the ledger",
              "tool": "ledger.record_entry", "args": {"key": "tax", "amount": 12},
              "depends_on": ["look"]}  # fmt: skip
    version = approved(author, approver, [LOOK, record])

    run = run_services.start_run(version, operator)
    drain()

    run.refresh_from_db()
    assert run.status == "succeeded", run.blocked_reason
    assert StepRun.objects.get(run=run, step_id="look").output == {
        "entries": {"rent": 900, "fees": 40}
    }
    assert ledger.calls() == [
        {"tool": "list_entries", "args": {}},
        {"tool": "record_entry", "args": {"key": "tax", "amount": 12}},
    ]


def test_a_destructive_mcp_tool_waits_for_a_person_with_its_preview_then_runs(
    ledger, author, approver, operator, api_client
):
    version = approved(author, approver, [LOOK, DROP])
    run = run_services.start_run(version, operator)
    drain()

    shown = api_client(operator).get(f"/api/v1/runs/{run.pk}").json()
    waiting = {step["step_id"]: step for step in shown["steps"]}["drop"]
    assert (shown["status"], waiting["status"]) == ("awaiting_approval", "awaiting_approval")
    preview = waiting["preview"]
    assert (preview["kind"], preview["summary"]) == ("mcp", "ledger.delete_entry (delete)")
    assert preview["text"].splitlines()[:4] == [
        "MCP server 'ledger', tool 'delete_entry'",
        "annotations: destructiveHint=True, openWorldHint=False",
        "read as: side effect delete, risk high, not idempotent",
        "arguments:",
    ]
    assert ledger.calls() == [{"tool": "list_entries", "args": {}}]  # the delete never arrived

    by_author = _post(api_client(author), f"/runs/{run.pk}/steps/drop/approve")
    assert by_author.status_code == 403
    approved_step = _post(
        api_client(approver),
        f"/runs/{run.pk}/steps/drop/approve",
        {"comment": "rent is settled", "preview_hash": preview["hash"]},
    )
    assert approved_step.status_code == 200, approved_step.json()
    drain()

    run.refresh_from_db()
    assert run.status == "succeeded", run.blocked_reason
    assert ledger.entries() == {"fees": 40}
    assert ledger.calls()[-1] == {"tool": "delete_entry", "args": {"key": "rent"}}


def test_a_tool_that_turned_destructive_after_approval_waits_for_a_person(
    ledger, settings, author, approver, operator
):
    settings.FORGE_MCP_REFRESH_SECONDS = 0  # every use lists the servers again
    version = approved(author, approver, [LOOK])  # list_entries read-only: nothing waits
    ledger.publish_v2()  # the server's next version drops the read-only annotation
    ledger.kill()

    run = run_services.start_run(version, operator)
    drain()

    run.refresh_from_db()
    assert run.status == "awaiting_approval"
    step = StepRun.objects.get(run=run, step_id="look")
    assert step.status == "awaiting_approval"
    assert ledger.calls() == []


def test_the_time_server_from_pypi_is_compiled_previewed_approved_and_run(
    settings, tmp_path, author, approver, operator, api_client
):
    deploy(settings, tmp_path, time=time_entry())
    now = {"id": "now", "description": "Read the current time in Paris",
           "tool": "time.get_current_time", "args": {"timezone": "Europe/Paris"},
           "done_when": {"required_keys": ["datetime"]}}  # fmt: skip
    try:
        # Its tools are read-only: the plan names the tool to make its call wait.
        version = approved(
            author, approver, [now], requires_approval_before=["time.get_current_time"]
        )
        run = run_services.start_run(version, operator)
        drain()
        step = StepRun.objects.get(run=run, step_id="now")
        assert step.status == "awaiting_approval"
        shown = api_client(operator).get(f"/api/v1/runs/{run.pk}").json()
        preview = shown["steps"][0]["preview"]
        assert preview["text"].startswith("MCP server 'time', tool 'get_current_time'\n")
        run_services.approve_step(run, "now", approver, "ok", preview["hash"])
        drain()
    finally:
        compilation.toolbox().close()

    run.refresh_from_db()
    assert run.status == "succeeded", run.blocked_reason
    assert StepRun.objects.get(run=run, step_id="now").output["timezone"] == "Europe/Paris"


# --- Refresh ------------------------------------------------------------------------------


def test_only_an_admin_may_ask_the_servers_again_and_the_refresh_is_audited(
    ledger, settings, tmp_path, approver, admin, api_client
):
    assert _post(api_client(approver), "/tools/refresh").status_code == 403

    answer = _post(api_client(admin), "/tools/refresh")

    assert answer.status_code == 200
    assert [(s["name"], s["available"]) for s in answer.json()] == [
        ("ledger", True),
        ("gone", False),
    ]
    [event] = AuditEvent.objects.filter(action="tools.refreshed")
    assert (event.actor, event.object_type, event.object_id) == ("admin", "tools", "mcp")
    assert [(s["name"], s["available"], s["tools"]) for s in event.payload["servers"]] == [
        ("ledger", True, 3),
        ("gone", False, 0),
    ]


def test_a_refresh_brings_back_a_server_that_was_down(settings, tmp_path, admin, api_client):
    later = Ledger(tmp_path / "later")  # its directory does not exist yet: it cannot start
    deploy(settings, tmp_path, later=later.entry())
    try:
        assert "later.list_entries" not in catalogue(api_client(admin))
        Ledger.at(later.root, rent=1)

        answer = _post(api_client(admin), "/tools/refresh")
        tools = catalogue(api_client(admin))
    finally:
        compilation.toolbox().close()

    assert [(s["name"], s["available"], s["error"]) for s in answer.json()] == [("later", True, "")]
    assert tools["later.list_entries"]["side_effect"] == "read"


# --- Checks -------------------------------------------------------------------------------


def test_manage_py_check_reports_a_malformed_servers_file_before_starting_anything(
    settings, tmp_path
):
    bad = tmp_path / "mcp.json"
    bad.write_text('{"mcpServers": {"docs": {"type": "sse", "url": "https://x/sse"}}}')
    settings.FORGE_MCP_SERVERS = str(bad)

    [error] = mcp_servers_check()

    assert error.id == "forge.E001"
    assert error.msg == (
        f"FORGE_MCP_SERVERS: MCP servers file {bad}: server 'docs': unknown type 'sse' (the SSE "
        "transport is not supported; use streamable HTTP)"
    )
    settings.FORGE_MCP_SERVERS = str(mcp_servers_file(tmp_path / "ok.json", time=time_entry()))
    assert mcp_servers_check() == []
