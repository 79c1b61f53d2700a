"""Signed webhooks against a real local HTTP server: the HMAC over the exact body, the
Slack-compatible payload, retries with exponential backoff on the task workers, the
delivery log for admins only, the host allow list (SSRF) and audited configuration."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import runpy
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import standardwebhooks
from django.conf import settings as django_settings
from django.core.exceptions import ImproperlyConfigured
from django.utils import timezone
from django_tasks_db.models import DBTaskResult

from forge import webhook_signatures as signature_check
from plans import services as plan_services
from reviews import webhooks
from reviews.models import Webhook, WebhookDelivery
from tests.web.runs_helpers import drain
from tests.web.webhook_receiver import webhook_receiver

pytestmark = pytest.mark.django_db


@pytest.fixture
def receiver(settings: Any) -> Any:
    with webhook_receiver() as found:
        settings.FORGE_WEBHOOK_ALLOWED_HOSTS = [f"127.0.0.1:{found.port}"]
        settings.FORGE_BASE_URL = "https://forge.example.com"
        settings.FORGE_WEBHOOK_BACKOFF_SECONDS = 30
        settings.FORGE_WEBHOOK_ATTEMPTS = 4
        yield found


def _hook(client: Any, url: str, **fields: Any) -> Any:
    return client.post(
        "/api/v1/webhooks", {"name": "team", "url": url, **fields}, content_type="application/json"
    )


def _reject(make_plan: Any, author: Any, approver: Any, capture: Any) -> Any:
    version = make_plan(author)
    with capture(execute=True):
        plan_services.reject(version, approver, "Use the staging host.")
    return version


def test_a_rejection_is_posted_signed_to_the_webhook_with_a_link_to_the_exact_page(
    receiver, admin, author, approver, api_client, make_plan, django_capture_on_commit_callbacks
):
    made = _hook(api_client(admin), receiver.url, kinds=["version_rejected"])
    assert made.status_code == 201
    secret = made.json()["secret"]
    assert "secret" not in api_client(admin).get("/api/v1/webhooks").json()[0]

    version = _reject(make_plan, author, approver, django_capture_on_commit_callbacks)
    drain()

    [got] = receiver.received
    # Standard Webhooks: the id, the time and the body signed together with the secret.
    assert secret.startswith("whsec_")
    signature_check.verify(secret, got.body, got.headers)
    standardwebhooks.Webhook(secret).verify(got.body, got.headers)  # the reference library
    key = base64.b64decode(secret.removeprefix("whsec_"))
    signed = f"{got.headers['webhook-id']}.{got.headers['webhook-timestamp']}.".encode()
    digest = hmac.new(key, signed + got.body, hashlib.sha256).digest()
    assert got.headers["webhook-signature"] == "v1," + base64.b64encode(digest).decode()
    assert abs(int(got.headers["webhook-timestamp"]) - time.time()) < 60
    assert "x-forge-signature" not in got.headers
    assert got.headers["x-forge-event"] == "version_rejected"
    body = json.loads(got.body)
    assert body["kind"] == "version_rejected" and body["comment"] == "Use the staging host."
    assert body["url"] == (
        f"https://forge.example.com/plans/{version.plan_id}/versions/{version.number}/"
    )
    # With another secret, or once the body is changed, it does not verify.
    with pytest.raises(signature_check.SignatureInvalid):
        signature_check.verify(signature_check.new_secret(), got.body, got.headers)
    with pytest.raises(signature_check.SignatureInvalid):
        signature_check.verify(secret, got.body.replace(b"staging", b"prod"), got.headers)
    [row] = api_client(admin).get("/api/v1/webhook-deliveries").json()
    assert row["status"] == "delivered" and row["attempts"] == 1
    assert row["message_id"] == got.headers["webhook-id"]
    assert row["log"][0]["status_code"] == 200


def test_kinds_a_webhook_leaves_out_are_not_posted(
    receiver, admin, author, approver, api_client, make_plan, django_capture_on_commit_callbacks
):
    _hook(api_client(admin), receiver.url, kinds=["run_failed"])
    _reject(make_plan, author, approver, django_capture_on_commit_callbacks)
    drain()
    assert receiver.received == []
    assert not WebhookDelivery.objects.exists()


def test_the_slack_format_posts_text_with_the_link_and_the_comment(
    receiver, admin, author, approver, api_client, make_plan, django_capture_on_commit_callbacks
):
    _hook(api_client(admin), receiver.url, format="slack")
    version = _reject(make_plan, author, approver, django_capture_on_commit_callbacks)
    drain()
    [got] = [
        r for r in receiver.received if json.loads(r.body).get("text", "").find("rejected") > 0
    ]
    text = json.loads(got.body)["text"]
    link = f"https://forge.example.com/plans/{version.plan_id}/versions/{version.number}/"
    assert text.startswith(f"<{link}|release notes v{version.number} was rejected by approver>")
    assert "> Use the staging host." in text


def test_failed_attempts_are_retried_with_exponential_backoff_then_delivered(
    receiver, admin, author, approver, api_client, make_plan, django_capture_on_commit_callbacks
):
    _hook(api_client(admin), receiver.url, kinds=["version_rejected"])
    receiver.statuses = [500, 503]
    _reject(make_plan, author, approver, django_capture_on_commit_callbacks)
    delivery = WebhookDelivery.objects.get()

    start = timezone.now()
    first = webhooks.attempt(delivery.pk, now=start)
    assert (first.status, first.attempts) == ("pending", 1)
    # 30 s, less up to a fifth at random (jitter)
    assert start + timedelta(seconds=24) <= first.next_attempt_at <= start + timedelta(seconds=30)
    second = webhooks.attempt(delivery.pk, now=start + timedelta(seconds=30))
    waited = second.next_attempt_at - (start + timedelta(seconds=30))
    assert timedelta(seconds=48) <= waited <= timedelta(seconds=60)  # doubled
    third = webhooks.attempt(delivery.pk, now=start + timedelta(seconds=90))
    assert (third.status, third.attempts, third.next_attempt_at) == ("delivered", 3, None)
    assert [entry["status_code"] for entry in third.log] == [500, 503, 200]
    assert [entry["error"] for entry in third.log] == ["HTTP status 500", "HTTP status 503", ""]
    # Every attempt carried the same body and message id, each signed when it was sent.
    assert len({r.body for r in receiver.received}) == 1 and len(receiver.received) == 3
    assert {r.headers["webhook-id"] for r in receiver.received} == {delivery.message_id}
    secret = Webhook.objects.get().secret
    for got in receiver.received:
        signature_check.verify(secret, got.body, got.headers)


def test_a_captured_delivery_replayed_later_is_refused_by_the_receiver(
    receiver, admin, author, approver, api_client, make_plan, django_capture_on_commit_callbacks
):
    secret = _hook(api_client(admin), receiver.url, kinds=["version_rejected"]).json()["secret"]
    _reject(make_plan, author, approver, django_capture_on_commit_callbacks)
    drain()
    [got] = receiver.received
    signature_check.verify(secret, got.body, got.headers)  # fresh: accepted

    # The same bytes sent again six minutes later: the signed time is too old, and
    # another time would not match the signature (tests/unit/test_webhook_signatures.py).
    later = datetime.now(UTC) + timedelta(minutes=6)
    with pytest.raises(signature_check.SignatureInvalid, match="too old"):
        signature_check.verify(secret, got.body, got.headers, now=later)


def test_the_worker_schedules_the_retry_for_when_its_backoff_has_passed(
    receiver, admin, author, approver, api_client, make_plan, django_capture_on_commit_callbacks
):
    _hook(api_client(admin), receiver.url, kinds=["version_rejected"])
    receiver.statuses = [500]
    _reject(make_plan, author, approver, django_capture_on_commit_callbacks)
    before = timezone.now()
    drain()  # the first attempt fails; the retry waits 30 s, so the queue is "empty"
    delivery = WebhookDelivery.objects.get()
    assert (delivery.status, delivery.attempts) == ("pending", 1)
    waiting = DBTaskResult.objects.filter(
        task_path="reviews.tasks.deliver_webhook", status="READY"
    ).get()
    assert waiting.run_after >= before + timedelta(seconds=24)
    assert waiting.run_after == delivery.next_attempt_at
    # Its time comes: the worker delivers it.
    DBTaskResult.objects.filter(pk=waiting.pk).update(run_after=timezone.now())
    drain()
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts) == ("delivered", 2)


def test_a_delivery_gives_up_after_the_last_attempt(
    receiver, admin, author, approver, api_client, make_plan, django_capture_on_commit_callbacks
):
    _hook(api_client(admin), receiver.url, kinds=["version_rejected"])
    receiver.statuses = [500] * 10
    _reject(make_plan, author, approver, django_capture_on_commit_callbacks)
    delivery = WebhookDelivery.objects.get()
    for _ in range(4):
        delivery = webhooks.attempt(delivery.pk)
    assert (delivery.status, delivery.attempts, delivery.next_attempt_at) == ("failed", 4, None)
    assert delivery.log[-1]["error"] == "HTTP status 500; gave up after 4 attempts"
    assert [entry["error"] for entry in delivery.log[:3]] == ["HTTP status 500"] * 3
    assert webhooks.attempt(delivery.pk).attempts == 4  # nothing more is sent
    assert len(receiver.received) == 4


def test_the_wait_between_attempts_is_capped_and_jittered(settings):
    settings.FORGE_WEBHOOK_BACKOFF_SECONDS = 30
    settings.FORGE_WEBHOOK_BACKOFF_MAX_SECONDS = 3600

    # 30 * 2**42 seconds would be past timedelta's range: the cap holds it.
    assert timedelta(seconds=2880) <= webhooks.backoff(43) <= timedelta(seconds=3600)
    assert webhooks.backoff(10_000) <= timedelta(hours=1)
    firsts = {webhooks.backoff(1) for _ in range(20)}
    assert len(firsts) > 1 and all(timedelta(seconds=24) <= d <= timedelta(seconds=30)
                                   for d in firsts)  # fmt: skip


def test_hosts_off_the_allow_list_are_refused_when_saved_and_when_sent(
    receiver, admin, author, approver, api_client, make_plan, settings,
    django_capture_on_commit_callbacks,
):  # fmt: skip
    client = api_client(admin)
    for url in ("http://169.254.169.254/latest/meta-data", "http://127.0.0.1:1/x",
                "file:///etc/passwd", f"http://localhost:{receiver.port}/hook"):  # fmt: skip
        refused = _hook(client, url)
        assert refused.status_code == 400, url
        assert refused.json()["code"] == "webhook_host_not_allowed"
    assert _hook(client, receiver.url).status_code == 201
    settings.FORGE_WEBHOOK_ALLOWED_HOSTS = []  # taken off the list after it was saved
    _reject(make_plan, author, approver, django_capture_on_commit_callbacks)
    delivery = webhooks.attempt(WebhookDelivery.objects.get().pk)
    assert "not on FORGE_WEBHOOK_ALLOWED_HOSTS" in delivery.log[0]["error"]
    assert delivery.log[0]["status_code"] is None
    assert receiver.received == []


def test_an_allowed_name_that_resolves_inside_is_refused_when_saved(
    receiver, admin, api_client, settings, dns
):
    settings.FORGE_WEBHOOK_ALLOWED_HOSTS = [f"localhost:{receiver.port}", "hooks.partner.example"]
    dns["hooks.partner.example"] = ["169.254.169.254"]  # its DNS now points at the metadata
    client = api_client(admin)

    for url, why in (
        (f"http://localhost:{receiver.port}/hook", "resolves to 127.0.0.1, a loopback address"),
        ("http://hooks.partner.example/forge", "169.254.169.254, a link-local address"),
    ):
        refused = _hook(client, url)
        assert refused.status_code == 400, url
        assert refused.json()["code"] == "webhook_host_not_allowed"
        assert why in refused.json()["detail"]
    assert not Webhook.objects.exists()


def test_a_name_rebound_inside_after_it_was_saved_is_refused_when_sent(
    receiver, admin, author, approver, api_client, make_plan, settings, dns,
    django_capture_on_commit_callbacks,
):  # fmt: skip
    settings.FORGE_WEBHOOK_ALLOWED_HOSTS = [f"hooks.partner.example:{receiver.port}"]
    dns["hooks.partner.example"] = ["93.184.216.34"]  # public when the admin saves it
    url = f"http://hooks.partner.example:{receiver.port}/hook"
    assert _hook(api_client(admin), url).status_code == 201
    dns["hooks.partner.example"] = ["127.0.0.1"]  # then its DNS is pointed inside
    _reject(make_plan, author, approver, django_capture_on_commit_callbacks)
    delivery = WebhookDelivery.objects.get()

    refused = webhooks.attempt(delivery.pk)
    assert (
        "'hooks.partner.example' resolves to 127.0.0.1, a loopback address"
        in (refused.log[0]["error"])
    )
    assert refused.log[0]["status_code"] is None and receiver.received == []

    # Listing the address itself lets it through: to that address, under the name.
    settings.FORGE_WEBHOOK_ALLOWED_HOSTS += ["127.0.0.1"]
    assert webhooks.attempt(delivery.pk).status == "delivered"
    [got] = receiver.received
    assert got.headers["host"] == f"hooks.partner.example:{receiver.port}"


def test_only_admins_configure_webhooks_and_read_the_log_and_changes_are_audited(
    receiver, admin, approver, author, api_client, session_client
):
    from audit.models import AuditEvent

    assert _hook(api_client(approver), receiver.url).status_code == 403
    assert api_client(approver).get("/api/v1/webhook-deliveries").status_code == 403
    assert session_client(author).get("/inbox/webhooks/").status_code == 403
    page = session_client(admin).get("/inbox/webhooks/")
    assert page.status_code == 200 and "Delivery log" in page.content.decode()
    assert "Standard Webhooks" in page.content.decode()
    assert "only at public addresses unless the address itself is listed" in (page.content.decode())

    made = _hook(api_client(admin), receiver.url).json()
    changed = api_client(admin).patch(
        f"/api/v1/webhooks/{made['id']}", {"active": False, "rotate_secret": True},
        content_type="application/json",
    )  # fmt: skip
    assert changed.status_code == 200 and changed.json()["secret"] != made["secret"]
    assert api_client(admin).delete(f"/api/v1/webhooks/{made['id']}").status_code == 204
    events = list(AuditEvent.objects.filter(object_type="webhook").order_by("seq"))
    assert [e.action for e in events] == ["webhook.created", "webhook.updated", "webhook.deleted"]
    assert events[1].payload["after"]["active"] is False
    assert events[1].payload["rotated"] is True
    assert all(made["secret"] not in json.dumps(e.payload) for e in events)


@pytest.mark.parametrize(
    ("variable", "value", "problem"),
    [
        ("FORGE_WEBHOOK_ATTEMPTS", "0", "must be at least 1"),
        ("FORGE_WEBHOOK_ATTEMPTS", "1000", "must be at most 100"),
        ("FORGE_WEBHOOK_BACKOFF_MAX_SECONDS", "0", "must be at least 1"),
        ("FORGE_WEBHOOK_ALLOWED_HOSTS", "hooks.example.com,10.0.0.0/33", "is not an allow list"),
        ("FORGE_HTTP_ALLOWED_HOSTS", "300.1.1.1:80", "is not an allow list: '300.1.1.1:80'"),
    ],
)
def test_the_attempts_the_wait_and_the_allow_lists_are_checked_settings(
    monkeypatch, variable, value, problem
):
    monkeypatch.setenv(variable, value)
    with pytest.raises(ImproperlyConfigured, match=f"{variable} {problem}"):
        runpy.run_path(str(Path(django_settings.BASE_DIR) / "forge_web" / "settings.py"))


def test_a_webhook_the_page_refuses_keeps_what_was_typed_and_says_why(client, admin):
    client.force_login(admin)

    response = client.post(
        "/inbox/webhooks/",
        {"action": "create", "name": "team chat", "url": "https://hooks.example.com/forge",
         "format": "slack", "kinds": ["run_failed", "step_waiting"]},
    )  # fmt: skip

    assert response.status_code == 400
    page = response.content.decode()
    assert '<li class="message error">' in page
    assert "is not on FORGE_WEBHOOK_ALLOWED_HOSTS (webhook_host_not_allowed)" in page
    assert 'name="name" maxlength="100" value="team chat"' in page
    assert 'value="https://hooks.example.com/forge"' in page
    assert '<option value="slack" selected>' in page
    assert 'value="run_failed" checked' in page and 'value="step_waiting" checked' in page
    assert 'value="run_needs_replan" checked' not in page
