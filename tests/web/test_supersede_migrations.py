"""The data steps of the migrations that brought superseded versions and resolved inbox
items (issue 25): what was stale before them is settled once, as the rules would have
settled it. Each step runs here over today's models, which hold every field it reads."""

from __future__ import annotations

import importlib

import pytest
from django.apps import apps

from audit.models import AuditEvent
from forge.plan import from_data
from plans import services as plan_services
from plans.models import PlanVersion
from reviews.models import Notification

pytestmark = pytest.mark.django_db(transaction=True)  # the inbox is written after commit

plans_0008 = importlib.import_module("plans.migrations.0008_superseded")
reviews_0004 = importlib.import_module("reviews.migrations.0004_resolved_notifications")


def document(n):
    return from_data({"goal": "Publish", "steps": [
        {"id": "say", "description": "Say it", "tool": "echo", "args": {"n": n}}]})  # fmt: skip


def as_before(*versions):
    """Put versions back as they were before the rule: awaiting approval, never superseded."""
    PlanVersion.objects.filter(pk__in=[v.pk for v in versions]).update(
        status="awaiting_approval", superseded_by=None
    )


def test_versions_left_awaiting_behind_a_submitted_one_are_superseded(author):
    v1 = plan_services.create_plan(author, "Board review", document(1))
    v2 = plan_services.create_version(v1.plan, author, document(2))
    v3 = plan_services.create_version(v1.plan, author, document(3), submit=False)
    alone = plan_services.create_plan(author, "Alone", document(1))
    as_before(v1, v2, alone)

    plans_0008.supersede_stale_versions(apps, None)

    statuses = {
        (v.plan_id, v.number): (v.status, v.superseded_by_id) for v in PlanVersion.objects.all()
    }
    assert statuses[(v1.plan_id, 1)] == ("superseded", v2.pk)
    assert statuses[(v1.plan_id, 2)] == ("awaiting_approval", None)  # the draft v3 is no reason
    assert statuses[(v1.plan_id, 3)] == ("draft", None)
    assert statuses[(alone.plan_id, 1)] == ("awaiting_approval", None)
    event = AuditEvent.objects.filter(action="plan_version.superseded", actor="migration").get()
    assert (event.payload["version"], event.payload["superseded_by"]) == (1, 2)
    del v3


def test_asks_written_before_are_resolved_when_what_they_asked_for_no_longer_waits(
    author, approver, make_user
):
    second = make_user("second", "approver")
    decided = plan_services.create_plan(author, "Decided", document(1))
    plan_services.approve(decided, approver, "ok")
    waiting = plan_services.create_plan(author, "Waiting", document(1))
    stale = plan_services.create_plan(author, "Stale", document(1))
    plan_services.create_version(stale.plan, author, document(2))
    sent_back = plan_services.create_plan(author, "Sent back", document(1))
    plan_services.request_changes(sent_back, approver, "smaller")
    plan_services.create_version(sent_back.plan, author, document(2))
    Notification.objects.update(resolved_at=None, resolution="")  # as written before

    reviews_0004.resolve_stale_asks(apps, None)

    def why(kind, version):
        row = Notification.objects.get(recipient__in=[second, author], kind=kind,
                                       version_id=version.pk)  # fmt: skip
        return row.resolution

    assert why("version_submitted", decided) == "approved"
    assert why("version_submitted", waiting) == ""
    assert why("version_submitted", stale) == "superseded by v2"
    assert why("changes_requested", sent_back) == "answered by v2"
    assert Notification.objects.filter(recipient=second, resolved_at__isnull=True).count() == 3
