"""The impact summary in Chromium (issue 15): a reviewer reads, on the approval card and
on the version page, what the seed 003 example and a plan using an MCP server will touch,
ask, cost and take, and the version page draws a plan's milestones as bands.
Screenshots go to test-artifacts/e2e/<test>/."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from playwright.sync_api import expect

from forge.plan import from_data
from plans import services
from tests.web.mcp_servers import deploy_ledger

from .conftest import shoot

pytestmark = pytest.mark.django_db(transaction=True)

SEED_003 = json.loads(
    (Path(__file__).resolve().parents[2] / "examples" / "agent-step-in-chinese.json").read_text()
)
LEDGER = {
    "goal": "Close the rent account in the ledger",
    "milestones": [
        {"id": "look", "title": "Read the ledger", "steps": ["look"], "review": True},
        {"id": "close", "title": "Close the account", "steps": ["drop", "notify"]},
    ],
    "steps": [
        {"id": "look", "description": "List the ledger entries", "tool": "ledger.list_entries",
         "done_when": {"required_keys": ["entries"]}, "estimate": {"seconds": 5}},
        {"id": "drop", "description": "Delete the rent entry from the ledger",
         "tool": "ledger.delete_entry", "args": {"key": "rent"}, "depends_on": ["look"],
         "done_when": "the entry is gone", "rollback_hint": "add rent 900 back",
         "estimate": {"seconds": 3}},
        {"id": "notify", "description": "Tell the landlord's portal the account is closed",
         "tool": "file_write", "depends_on": ["drop"],
         "args": {"path": "closed/rent.md", "content": "closed\n"},
         "done_when": {"required_keys": ["committed"]}, "rollback_hint": "delete closed/rent.md"},
    ],
}  # fmt: skip


@pytest.fixture
def ledger(settings, tmp_path):
    yield from deploy_ledger(settings, tmp_path)


def impact(page, scope, name):
    return page.locator(f"{scope} [data-impact={name}]").first


def test_the_seed_003_example_shows_its_impact_on_the_card_and_the_version_page(page, people):
    ada = people.make("ada", "author")
    ben = people.make("ben", "approver")
    version = services.create_plan(ada, "Supplier risk (seed 003)", from_data(SEED_003))

    people.login(page, ben)
    page.goto("/review/")
    card = f"#version-{version.pk}"
    expect(impact(page, card, "scopes")).to_have_text("database_read file_read")
    expect(impact(page, card, "side-effects")).to_contain_text("read × 1")
    expect(impact(page, card, "duration")).to_contain_text(
        "unknown (1 step has no duration estimate)"
    )
    expect(impact(page, card, "approvals")).to_contain_text("1: this version")
    expect(impact(page, card, "hosts")).to_have_text("none")
    page.locator(card).scroll_into_view_if_needed()
    shoot(page, "seed-003-approval-card")

    page.goto(f"/plans/{version.plan_id}/versions/1/")
    expect(impact(page, "#impact", "scopes")).to_have_text("database_read file_read")
    expect(impact(page, "#impact", "mcp")).to_have_text("none")
    shoot(page, "seed-003-version-page")


def test_an_mcp_plan_shows_its_server_tools_pauses_and_milestone_bands(ledger, page, people):
    ada = people.make("ada", "author")
    ben = people.make("ben", "approver")
    version = services.create_plan(ada, "Ledger", from_data(LEDGER))
    assert not version.has_errors, version.diagnostics

    people.login(page, ben)
    page.goto("/review/")
    card = f"#version-{version.pk}"
    expect(impact(page, card, "mcp")).to_contain_text(
        "ledger: ledger.delete_entry, ledger.list_entries"
    )
    expect(impact(page, card, "scopes")).to_have_text("file_write mcp.ledger")
    expect(impact(page, card, "side-effects")).to_contain_text("delete × 1")
    expect(impact(page, card, "files")).to_have_text("closed/rent.md")
    expect(impact(page, card, "approvals")).to_contain_text(
        "3: this version, step drop, review after look"
    )
    expect(impact(page, card, "duration")).to_contain_text(
        "at least 8 s (1 step has no duration estimate)"
    )
    page.locator(card).scroll_into_view_if_needed()
    shoot(page, "mcp-approval-card")

    page.goto(f"/plans/{version.plan_id}/versions/1/")
    page.wait_for_function("window.forge && window.forge.graph")
    bands = page.evaluate(
        """async () => {
          await window.forge.graph.ready;
          const bands = window.forge.graph.cy.nodes('.milestone-band');
          return bands.map((n) => [n.id(), n.data('label')]);
        }"""
    )
    assert bands == [
        ["milestone:look", "1. Read the ledger · then a review"],
        ["milestone:close", "2. Close the account"],
    ]
    expect(impact(page, "#impact", "mcp")).to_contain_text("ledger")
    expect(page.locator("#milestones li")).to_have_count(2)
    shoot(page, "mcp-version-page")
