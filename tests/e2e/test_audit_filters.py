"""Issue 12, problem 9, in the browser: the audit filters pick from what the trail holds,
match without regard to case, hide logins in one click; an auditor reads the trail with
plan arguments hidden and sees only the pages their role opens."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from playwright.sync_api import expect

from audit.services import LoadedEvent, bulk_load_chain

from .conftest import shoot

pytestmark = pytest.mark.django_db(transaction=True)

T0 = datetime(2026, 3, 2, 8, 0, tzinfo=UTC)


def history():
    """Logins drowning three real events, one of which carries a step's arguments."""
    events = [
        LoadedEvent(T0 + timedelta(minutes=n), "bob", "user.logged_in", "user", "2", {})
        for n in range(40)
    ]
    events += [
        LoadedEvent(T0 + timedelta(minutes=41), "Ada", "plan_version.created", "plan", "7",
                    {"plan": 7, "version": 1, "steps": 2}),
        LoadedEvent(T0 + timedelta(minutes=42), "grace", "plan_version.approved", "plan", "7",
                    {"plan": 7, "version": 1, "comment": "fine"}),
        LoadedEvent(T0 + timedelta(minutes=43), "grace", "run.step_approved", "run", "3",
                    {"step": "publish", "args": {"path": "q3.md", "content": "Q3 revenue"}}),
    ]  # fmt: skip
    bulk_load_chain(events)


def actions(page):
    return page.locator("#audit-table td.action").all_inner_texts()


def test_a_reader_hides_logins_and_picks_filters_from_what_exists(page, people):
    history()
    audrey = people.make("audrey", "viewer")
    people.login(page, audrey)

    page.goto("/audit/")
    expect(page.locator("#result-count")).to_have_text("44 events")
    shoot(page, "1-logins-drown-the-rest")

    page.click("#hide-logins")
    expect(page.locator("#result-count")).to_have_text("3 events match")
    assert actions(page) == ["run.step_approved", "plan_version.approved", "plan_version.created"]
    expect(page.locator("#hide-logins")).to_have_count(0)
    shoot(page, "2-logins-hidden")

    # The action is picked from the actions that exist; the actor is typed in any case.
    options = page.locator("#id_action option").all_inner_texts()
    assert options == [
        "Any action",
        "plan_version.approved",
        "plan_version.created",
        "run.step_approved",
        "user.logged_in",
    ]
    assert page.locator("#actor-choices option").evaluate_all("o => o.map(x => x.value)") == [
        "Ada",
        "audrey",
        "bob",
        "grace",
    ]
    page.select_option("#id_action", "plan_version.created")
    page.fill("#id_actor", "ADA")
    page.get_by_role("button", name="Apply filters").click()
    expect(page.locator("#result-count")).to_have_text("1 event matches")
    assert actions(page) == ["plan_version.created"]
    expect(page.locator("#id_actor")).to_have_value("ADA")
    shoot(page, "3-picked-and-any-case")

    # Arguments are shown to a role that may read plans.
    page.click("#clear-filters")
    page.locator("#audit-table tr[data-seq='43'] summary").click()
    expect(page.locator("#audit-table tr[data-seq='43'] pre.json")).to_contain_text("Q3 revenue")


def test_an_auditor_reads_the_trail_without_plan_arguments(page, people):
    history()
    ivy = people.make("ivy", "auditor")
    people.login(page, ivy)

    expect(page.locator("header nav.nav a")).to_have_text(["Audit", "Metrics", "API docs"])
    page.goto("/audit/")
    expect(page.locator("#arguments-hidden")).to_be_visible()
    row = page.locator("#audit-table tr[data-seq='43']")
    row.locator("summary").click()
    expect(row.locator("pre.json")).to_contain_text('"args": "[hidden: plan arguments]"')
    expect(row.locator("pre.json")).not_to_contain_text("Q3 revenue")
    expect(page.locator("#verify-all")).to_be_visible()  # an auditor may walk the chain
    shoot(page, "1-arguments-hidden")

    assert page.goto("/plans/").status == 403
    shoot(page, "2-plans-refused")
