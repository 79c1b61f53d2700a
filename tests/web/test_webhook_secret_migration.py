"""Migrating to Standard Webhooks: a webhook saved before keeps its key (its old secret's
bytes, now written ``whsec_`` + base64), and each delivery gets its message id."""

from __future__ import annotations

import base64

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = [("reviews", "0004_resolved_notifications")]
AFTER = [("reviews", "0005_standard_webhooks")]


def _migrate(targets):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


def test_a_webhook_saved_before_keeps_its_key_in_the_standard_form():
    old_apps = _migrate(BEFORE)
    try:
        hook = old_apps.get_model("reviews", "Webhook").objects.create(
            name="team", url="http://127.0.0.1:9/hook",
            secret="kq3-_9zXr0tXJ2yQ4oVtP1lC8cRrZbWl3QmFq2sY0aE", created_by="root",
        )  # fmt: skip
        deliveries = old_apps.get_model("reviews", "WebhookDelivery").objects
        for news in ("a", "b"):
            deliveries.create(webhook_id=hook.pk, kind="version_rejected", news=news, body="{}")

        new_apps = _migrate(AFTER)

        secret = new_apps.get_model("reviews", "Webhook").objects.get(pk=hook.pk).secret
        assert secret.startswith("whsec_")
        assert base64.b64decode(secret.removeprefix("whsec_")) == hook.secret.encode()
        ids = list(
            new_apps.get_model("reviews", "WebhookDelivery").objects.values_list(
                "message_id", flat=True
            )
        )
        assert len(set(ids)) == 2 and all(i.startswith("msg_") for i in ids)

        # And back: the old secret again, for the code before.
        old_apps = _migrate(BEFORE)
        assert old_apps.get_model("reviews", "Webhook").objects.get().secret == hook.secret
    finally:
        _migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())
