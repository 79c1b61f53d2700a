"""The editor over a deployment with MCP servers (FORGE_MCP_SERVERS): their tools are in
the step panel's catalogue with their side effects, their input schemas become argument
forms, and a step using a tool of a server that is down says so (badge and panel)."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from forge.plan import from_data
from plans import services
from tests.web.mcp_servers import deploy_ledger

from .conftest import shoot
from .graph import classes, click_node, problems, wait_compiled, wait_ready

pytestmark = pytest.mark.django_db(transaction=True)

PLAN = {
    "goal": "Close the rent account in the ledger",
    "steps": [
        {"id": "look", "description": "List the ledger entries", "tool": "ledger.list_entries"},
        {"id": "ask", "description": "Ask the offline server", "tool": "gone.anything",
         "depends_on": ["look"]},
    ],
}  # fmt: skip


@pytest.fixture
def ledger(settings, tmp_path):
    yield from deploy_ledger(settings, tmp_path)


def test_mcp_tools_get_argument_forms_and_a_down_server_is_named(ledger, page, people):
    ada = people.make("ada", "author")
    version = services.create_plan(ada, "Ledger", from_data(PLAN))
    people.login(page, ada)
    page.goto(f"/plans/{version.plan_id}/edit/")
    wait_ready(page)

    assert "d-tool_unavailable" in classes(page, "ask")
    assert ("tool_unavailable", "ask") in problems(page)
    click_node(page, "ask")
    expect(page.locator("select[name=tool] option:checked")).to_have_text(
        "gone.anything (server down)"
    )
    expect(page.locator(".tool-info")).to_contain_text(
        "Its MCP server is down, so it cannot be checked or run now: MCP server 'gone' did not"
    )
    shoot(page, "server-down")

    page.select_option("select[name=tool]", "ledger.delete_entry")
    expect(page.locator(".tool-info")).to_contain_text("Side effect: delete; scope: mcp.ledger")
    page.fill(".args-form input[name=key]", "rent")
    wait_compiled(page)
    ask = page.evaluate("window.forge.editor.store.document")["steps"][1]
    assert (ask["tool"], ask["args"]) == ("ledger.delete_entry", {"key": "rent"})
    assert "d-tool_unavailable" not in classes(page, "ask")
    assert "d-approval_required" in classes(page, "ask")
    shoot(page, "destructive-step")
