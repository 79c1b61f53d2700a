"""The impact summary on the pages (issue 15, problem 1): stored with each version when it
is saved, shown on the approval card and the version page, and compared between versions
on the diff page and the card ("adds host 'api.example.com'", "adds 40 s")."""

from __future__ import annotations

import html
import re

import pytest

from forge.plan import from_data
from plans import services as plan_services
from plans.models import PlanVersion

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _reaches_the_api(settings):
    # The plans below POST to api.example.com: this deployment lets http_request reach it
    # (otherwise they would not compile: host_not_allowed).
    settings.FORGE_HTTP_ALLOWED_HOSTS = ["api.example.com"]


FETCH = {
    "id": "fetch",
    "description": "Fetch the supplier list",
    "tool": "file_read",
    "args": {"path": "suppliers.csv"},
    "done_when": {"required_keys": ["content"]},
    "estimate": {"seconds": 12},
}
POST = {
    "id": "notify",
    "description": "Tell the supplier portal the review is done",
    "depends_on": ["fetch"],
    "tool": "http_request",
    "args": {"method": "POST", "url": "https://api.example.com/reviews", "body": {"q": 3}},
    "done_when": {"required_keys": ["status"]},
    "rollback_hint": "DELETE the review at api.example.com",
    "estimate": {"seconds": 40},
}


def version_of(user, steps, plan=None):
    data = {"goal": "Review the suppliers", "steps": steps}
    if plan is None:
        return plan_services.create_plan(user, "Suppliers", from_data(data))
    return plan_services.create_version(plan, user, from_data(data))


def text(response):
    plain = re.sub(r"<[^>]+>", " ", response.content.decode())
    return re.sub(r"\s+", " ", html.unescape(plain))


def test_each_version_stores_its_impact_when_saved(author):
    version = version_of(author, [FETCH, POST])

    stored = PlanVersion.objects.get(pk=version.pk).impact
    assert stored["hosts"] == ["api.example.com"]
    assert stored["duration"]["seconds"] == 52.0
    assert stored["pauses"] == [
        {"step": "notify", "reasons": ["external side effects always need a person's approval"]}
    ]


def test_a_version_with_errors_has_no_impact(author, client):
    version = version_of(author, [{"id": "a", "tool": "nope"}])

    assert version.impact is None
    client.force_login(author)
    page = client.get(f"/plans/{version.plan_id}/versions/1/")
    assert "No impact: this version does not compile." in text(page)


def test_the_version_page_shows_the_impact_and_what_changed_since_its_parent(author, client):
    first = version_of(author, [FETCH])
    version_of(author, [FETCH, POST], plan=first.plan)
    client.force_login(author)

    body = text(client.get(f"/plans/{first.plan_id}/versions/2/"))

    assert "Duration about 52 s critical path fetch → notify" in body
    assert "Hosts api.example.com" in body
    assert "Approvals 2: this version, step notify" in body
    assert "Impact since v1" in body
    assert "Adds host 'api.example.com'" in body
    assert "Adds 40 s to the estimated duration (12 s → 52 s)" in body


def test_the_diff_page_compares_the_impact(author, client):
    first = version_of(author, [FETCH])
    version_of(author, [FETCH, POST], plan=first.plan)
    client.force_login(author)

    body = text(client.get(f"/plans/{first.plan_id}/diff/?from=1&to=2"))

    assert "Impact of v2" in body
    assert "Adds host 'api.example.com'" in body
    assert "External steps: 0 → 1" in body


def test_the_approval_card_shows_the_impact_and_the_change_since_the_last_approval(
    author, approver, client
):
    first = version_of(author, [FETCH])
    plan_services.approve(first, approver)
    version_of(author, [FETCH, POST], plan=first.plan)
    client.force_login(approver)

    body = text(client.get("/review/"))

    assert "Impact" in body and "Hosts api.example.com" in body
    assert "Impact since v1" in body
    assert "Adds 40 s to the estimated duration (12 s → 52 s)" in body


def test_a_version_saved_before_impacts_were_kept_is_compiled_for_its_page(author, client):
    version = version_of(author, [FETCH, POST])
    PlanVersion.objects.filter(pk=version.pk).update(impact=None)
    client.force_login(author)

    assert "Hosts api.example.com" in text(client.get(f"/plans/{version.plan_id}/versions/1/"))


def test_warnings_on_the_approval_card_carry_their_fix_hint(author, approver, client):
    version_of(author, [{**FETCH, "done_when": None}])
    client.force_login(approver)

    body = text(client.get("/review/"))

    assert "missing_done_when" in body
    assert "Fix: add done_when with required_keys or checks" in body
