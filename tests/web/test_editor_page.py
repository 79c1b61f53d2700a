"""The editor page's replan mode (plans.views.edit with ``?from_run=RUN``): opened from a
run that needs a replan, it says what saving does and saves through
``POST /runs/RUN/replans``, with the session and CSRF token the editor posts with."""

from __future__ import annotations

import json
import re

import pytest
from django.test import Client

from plans.models import PlanVersion
from runs import services
from runs.models import Run

from .runs_helpers import FAILING_STEPS, FIXED_STEPS, approved_version, drain

pytestmark = pytest.mark.django_db(transaction=True)

STEPS, FIXED = FAILING_STEPS, FIXED_STEPS


def editor_data(response):
    match = re.search(
        r'<script id="editor-data" type="application/json">(.*?)</script>',
        response.content.decode(),
        re.DOTALL,
    )
    assert match, "no #editor-data on the page"
    return json.loads(match.group(1))


def run_needing_a_replan(author, approver, operator):
    version = approved_version(author, approver, STEPS)
    run = services.start_run(version, operator)
    drain()
    run.refresh_from_db()
    assert run.status == "needs_replan"
    return run


def test_the_editor_opened_from_a_run_saves_a_replan_through_the_run_and_says_so(
    author, approver, operator, client
):
    run = run_needing_a_replan(author, approver, operator)
    client.force_login(author)

    response = client.get(f"/plans/{run.plan_id}/edit/?version=1&from_run={run.pk}")

    assert response.status_code == 200
    assert editor_data(response)["replan"] == {
        "run": run.pk,
        "from_version": 1,
        "endpoint": f"runs/{run.pk}/replans",
        "run_url": f"/runs/{run.pk}/",
    }
    body = response.content.decode()
    assert f'data-replan="{run.pk}"' in body
    assert f'A replan of <a href="/runs/{run.pk}/">run #{run.pk}</a> from v1.' in body
    assert "it carries the side effects the run already performed" in body
    assert "<code>repeats_side_effect</code>" in body
    assert "A person other than its author must approve it before the run can resume" in body
    assert f'id="replan-back" href="/runs/{run.pk}/">Back to run #{run.pk}</a>' in body
    assert f"<h2>Save a replan of run #{run.pk}</h2>" in body
    assert 'name="replan_reason"' in body
    assert 'name="submit_for_review"' not in body  # a replan always goes up for review


def test_the_editor_without_a_run_saves_ordinary_versions(author, approver, client):
    version = approved_version(author, approver, STEPS)
    client.force_login(author)

    response = client.get(f"/plans/{version.plan_id}/edit/")

    assert response.status_code == 200
    assert editor_data(response)["replan"] is None
    body = response.content.decode()
    assert 'id="replan-banner"' not in body
    assert 'name="submit_for_review"' in body


@pytest.mark.parametrize("value", ["abc", "0", "-3", "1.5", "²", "9" * 20, ""])
def test_an_editor_address_naming_no_possible_run_is_not_found(value, author, approver, client):
    version = approved_version(author, approver, STEPS)
    client.force_login(author)

    response = client.get(f"/plans/{version.plan_id}/edit/", {"from_run": value})

    assert response.status_code == 404


def test_the_replan_mode_needs_the_editors_permission(author, approver, operator, viewer, client):
    run = run_needing_a_replan(author, approver, operator)
    for user in (viewer, approver, operator):
        client.force_login(user)
        response = client.get(f"/plans/{run.plan_id}/edit/?version=1&from_run={run.pk}")
        assert response.status_code == 403, user.username


def test_the_replan_the_editor_posts_needs_the_session_csrf_token_and_waits_for_review(
    author, approver, operator
):
    run = run_needing_a_replan(author, approver, operator)
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(author)
    browser.get(f"/plans/{run.plan_id}/edit/?version=1&from_run={run.pk}")  # sets the cookie
    token = browser.cookies["csrftoken"].value
    body = {"document": {"goal": "Score the supplier", "steps": FIXED}, "note": "cap the score"}
    path = f"/api/v1/runs/{run.pk}/replans"

    refused = browser.post(path, body, content_type="application/json")
    saved = browser.post(path, body, content_type="application/json", HTTP_X_CSRFTOKEN=token)

    assert (refused.status_code, refused.json()["code"]) == (403, "csrf_failed")
    assert saved.status_code == 201, saved.json()
    answer = saved.json()
    assert (answer["number"], answer["parent"], answer["status"]) == (2, 1, "awaiting_approval")
    assert answer["replan_reason"] == (
        "step 'score' invalid: check 1 failed: risk <= `10` with risk = 14.6"
    )
    version = PlanVersion.objects.get(plan_id=run.plan_id, number=2)
    assert (version.author, version.parent.number, version.note) == (author, 1, "cap the score")
    assert Run.objects.get(pk=run.pk).status == "needs_replan"  # nothing resumed it
