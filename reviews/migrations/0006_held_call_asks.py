"""Held gateway calls ask people in their inbox (``call_held``): the new kind, and the
held call an item asks about, indexed for the asks still open."""

from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("reviews", "0005_standard_webhooks"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name="notification",
            name="held_call_id",
            field=models.BigIntegerField(blank=True, null=True),
        ),
        migrations.AlterField(
            model_name="notification",
            name="kind",
            field=models.CharField(
                choices=[
                    ("version_submitted", "version submitted"),
                    ("version_approved", "version approved"),
                    ("version_rejected", "version rejected"),
                    ("changes_requested", "changes requested"),
                    ("comment_added", "comment added"),
                    ("thread_resolved", "thread resolved"),
                    ("step_waiting", "step waiting"),
                    ("step_needs_reconciliation", "step needs reconciliation"),
                    ("run_failed", "run failed"),
                    ("run_needs_replan", "run needs replan"),
                    ("call_held", "call held"),
                ],
                max_length=32,
            ),
        ),
        migrations.AlterField(
            model_name="webhookdelivery",
            name="kind",
            field=models.CharField(
                choices=[
                    ("version_submitted", "version submitted"),
                    ("version_approved", "version approved"),
                    ("version_rejected", "version rejected"),
                    ("changes_requested", "changes requested"),
                    ("comment_added", "comment added"),
                    ("thread_resolved", "thread resolved"),
                    ("step_waiting", "step waiting"),
                    ("step_needs_reconciliation", "step needs reconciliation"),
                    ("run_failed", "run failed"),
                    ("run_needs_replan", "run needs replan"),
                    ("call_held", "call held"),
                ],
                max_length=32,
            ),
        ),
        migrations.AddIndex(
            model_name="notification",
            index=models.Index(
                condition=models.Q(("resolved_at__isnull", True)),
                fields=["held_call_id"],
                name="notification_open_by_call",
            ),
        ),
    ]
