"""The auditor's job in the browser: read the trail, filter it, page through it, open a
payload, export what the filters select; an operator walks the whole chain and finds a
broken row."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta

import pytest
from playwright.sync_api import expect

from audit.services import LoadedEvent, bulk_load_chain
from tests.web.audit_helpers import tamper

from .conftest import shoot

pytestmark = pytest.mark.django_db(transaction=True)

T0 = datetime(2026, 3, 2, 8, 0, tzinfo=UTC)


def history(count=120):
    """``count`` events a minute apart: every third by ada about plan 7, the rest by bob."""

    def event(n):
        if n % 3 == 0:
            return LoadedEvent(
                T0 + timedelta(minutes=n),
                "ada",
                "plan_version.exported",
                "plan",
                "7",
                {"plan": 7, "version": n, "format": "yaml"},
            )
        return LoadedEvent(T0 + timedelta(minutes=n), "bob", "user.logged_in", "user", "2", {})

    bulk_load_chain(event(n) for n in range(count))
    # A payload a browser must show as text, never run.
    bulk_load_chain(
        [
            LoadedEvent(
                T0 + timedelta(minutes=count),
                "mallory",
                "plan.created",
                "plan",
                "9",
                {"name": "<img src=x onerror=alert(1)><script>alert(2)</script>"},
            ),
        ]
    )


def seqs(page):
    return [
        int(s)
        for s in page.locator("#audit-table tbody tr").evaluate_all(
            "rows => rows.map(r => r.dataset.seq)"
        )
    ]


def test_an_auditor_filters_pages_opens_and_exports_the_trail(page, people):
    history()
    audrey = people.make("audrey", "viewer")
    people.login(page, audrey)  # seq 122: her login

    page.goto("/audit/")
    expect(page.locator("#chain-state")).to_have_attribute("data-state", "ok")
    expect(page.locator("#chain-state h2")).to_have_text("Chain verified through seq 122")
    expect(page.locator("#result-count")).to_have_text("122 events")
    assert seqs(page)[:3] == [122, 121, 120]
    shoot(page, "1-trail")

    # The hostile payload is text: no image, no script ran (the page fixture fails on
    # any page error), and it reads as written.
    row = page.locator("#audit-table tr[data-seq='121']")
    row.locator("summary").click()
    expect(row.locator("pre.json")).to_contain_text('"<img src=x onerror=alert(1)>')
    assert page.locator("#audit-table img").count() == 0
    expect(row.locator(".hashes dd").nth(1)).to_have_text(re.compile(r"^[0-9a-f]{64}$"))
    shoot(page, "2-payload")

    # Filter: ada's events about plan 7 in a time window, by typing.
    page.fill("#id_actor", "ada")
    page.select_option("#id_object_type", "plan")
    page.fill("#id_object_id", "7")
    page.fill("#id_since", "2026-03-02T08:30")
    page.fill("#id_until", "2026-03-02T09:00")
    page.get_by_role("button", name="Apply filters").click()
    expect(page.locator("#result-count")).to_have_text("10 events match")
    assert seqs(page) == [58, 55, 52, 49, 46, 43, 40, 37, 34, 31]
    page.get_by_role("button", name="Expand all payloads").click()
    expect(page.locator("#audit-table details[open]")).to_have_count(10)
    expect(page.locator("#toggle-payloads")).to_have_text("Collapse all payloads")
    shoot(page, "3-filtered")

    # Export exactly that view, as JSON Lines and as CSV.
    with page.expect_download() as download:
        page.click("#export-jsonl")
    lines = download.value.path().read_text().splitlines()
    assert [json.loads(line)["seq"] for line in lines] == [31, 34, 37, 40, 43, 46, 49, 52, 55, 58]
    assert download.value.suggested_filename.endswith(".jsonl")
    with page.expect_download() as download:
        page.click("#export-csv")
    rows = download.value.path().read_text().splitlines()
    assert rows[0] == "seq,at,actor,action,object_type,object_id,payload,prev_hash,hash"
    assert len(rows) == 11

    # Clicking an action narrows to it; clearing brings everything back; pages go both ways.
    page.click("#clear-filters")
    page.locator("#audit-table tr[data-seq='122'] td.action a").click()
    expect(page.locator("#id_action")).to_have_value("user.logged_in")
    expect(page.locator("#result-count")).to_have_text("81 events match")
    logins = [122] + [seq for seq in range(120, 0, -1) if (seq - 1) % 3]  # audrey's, bob's
    assert seqs(page) == logins[:50]
    page.click("#page-older")
    expect(page.locator("#page-older")).to_have_count(0)
    assert seqs(page) == logins[50:]
    page.click("#page-newer")
    expect(page.locator("#page-newer")).to_have_count(0)
    assert seqs(page) == logins[:50]
    expect(page.locator("#id_action")).to_have_value("user.logged_in")

    # Jump to a seq.
    page.click("#clear-filters")
    page.fill("#goto-seq", "40")
    page.locator("form.goto button").click()
    expect(page.locator("#audit-table tbody tr").first).to_have_attribute("data-seq", "40")
    expect(page.locator("#audit-table tr.target")).to_have_count(1)
    shoot(page, "4-goto")


def test_an_operator_walks_the_whole_chain_and_finds_the_row_someone_changed(page, people):
    history(60)
    audrey = people.make("audrey", "operator")  # walking the chain needs audit.verify
    people.login(page, audrey)
    page.goto("/audit/")
    expect(page.locator("#chain-state")).to_have_attribute("data-state", "ok")

    page.get_by_role("button", name="Verify the whole chain").click()
    expect(page.locator(".messages")).to_contain_text("Walked the whole chain: 62 rows intact")
    expect(page.locator("#chain-state")).to_contain_text("Last full walk:")
    shoot(page, "1-walked")

    # Someone with database access edits an old row without re-chaining the rest: the
    # page's incremental check cannot see it; a full walk can.
    tamper("UPDATE audit_auditevent SET actor = %s WHERE seq = 12", ["nobody"])
    page.reload()
    expect(page.locator("#chain-state")).to_have_attribute("data-state", "ok")
    from audit.models import WalkLock

    WalkLock.objects.update(  # past FORGE_AUDIT_VERIFY_INTERVAL since the last walk
        finished_at=datetime.now(UTC) - timedelta(minutes=5)
    )
    page.get_by_role("button", name="Verify the whole chain").click()
    expect(page.locator("#chain-state")).to_have_attribute("data-state", "broken")
    expect(page.locator("#chain-state h2")).to_have_text("Chain broken at seq 12")
    expect(page.locator("#chain-state .reason")).to_have_text(
        "Hash does not match the row's content"
    )
    page.click("#show-broken")
    broken = page.locator("#audit-table tr.broken")
    expect(broken).to_have_attribute("data-seq", "12")
    expect(broken.locator("td.actor")).to_have_text("nobody")
    broken.locator("summary").click()
    expect(broken).to_contain_text("The chain breaks here: hash does not match")
    shoot(page, "2-broken")


def test_the_audit_page_needs_the_audit_view_permission(page, people):
    people.login(page, people.make("nobody"))

    response = page.goto("/audit/")

    assert response.status == 403
    expect(page.locator("h1")).to_have_text("Not allowed")
