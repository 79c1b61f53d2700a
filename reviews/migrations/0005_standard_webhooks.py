"""Webhooks sign with Standard Webhooks (``forge.webhook_signatures``).

A secret saved before was a text whose UTF-8 bytes were the HMAC key; it is rewritten as
``whsec_`` + the base64 of those same bytes, so the key does not change: a receiver that
holds the old secret computes the new spelling itself (docs/web.md). Each delivery gets
the message id sent as ``webhook-id``.
"""

import base64
import binascii
import secrets

from django.db import migrations, models

import reviews.models

PREFIX = "whsec_"


def _standard_secrets(apps, schema_editor):
    webhooks = apps.get_model("reviews", "Webhook")
    for hook in webhooks.objects.exclude(secret__startswith=PREFIX):
        hook.secret = PREFIX + base64.b64encode(hook.secret.encode()).decode()
        hook.save(update_fields=["secret"])


def _legacy_secrets(apps, schema_editor):
    """Back to the text whose bytes are the key, where those bytes are text; a secret
    made since (random bytes) stays as it is and needs a new one under the old code."""
    webhooks = apps.get_model("reviews", "Webhook")
    for hook in webhooks.objects.filter(secret__startswith=PREFIX):
        try:
            text = base64.b64decode(hook.secret.removeprefix(PREFIX), validate=True).decode()
        except (binascii.Error, UnicodeDecodeError):
            continue
        if text.isprintable():
            hook.secret = text
            hook.save(update_fields=["secret"])


def _message_ids(apps, schema_editor):
    deliveries = apps.get_model("reviews", "WebhookDelivery")
    for delivery in deliveries.objects.filter(message_id__isnull=True).only("pk"):
        delivery.message_id = f"msg_{secrets.token_hex(16)}"
        delivery.save(update_fields=["message_id"])


class Migration(migrations.Migration):
    dependencies = [
        ("reviews", "0004_resolved_notifications"),
    ]

    operations = [
        migrations.RunPython(_standard_secrets, _legacy_secrets),
        migrations.AddField(
            model_name="webhookdelivery",
            name="message_id",
            field=models.CharField(max_length=40, null=True),
        ),
        migrations.RunPython(_message_ids, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="webhookdelivery",
            name="message_id",
            field=models.CharField(
                default=reviews.models.new_message_id, max_length=40, unique=True
            ),
        ),
    ]
