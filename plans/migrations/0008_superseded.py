"""A version awaiting approval is superseded when a newer version of its plan is
submitted (issue 25). Versions that were left awaiting approval behind a newer submitted
one before this rule are superseded now, each by the first submitted version after it,
and audited as at run time (actor ``migration``), so that none stays approvable."""

import django.db.models.deletion
from django.db import migrations, models


def supersede_stale_versions(apps, schema_editor):
    # The audit trail's one writer keeps the hash chain; it needs only the audit tables,
    # which this migration depends on. A database without stale versions never calls it.
    from audit.services import record

    PlanVersion = apps.get_model("plans", "PlanVersion")
    waiting = PlanVersion.objects.filter(status="awaiting_approval").order_by("plan_id", "number")
    for older in waiting.iterator():
        newer = (
            PlanVersion.objects.filter(
                plan_id=older.plan_id, number__gt=older.number, submitted=True, has_errors=False
            )
            .order_by("number")
            .first()
        )
        if newer is None:
            continue
        older.status, older.superseded_by = "superseded", newer
        older.save(update_fields=["status", "superseded_by"])
        record("migration", "plan_version.superseded", "plan", older.plan_id, {
            "plan": older.plan_id, "version": older.number, "content_hash": older.content_hash,
            "superseded_by": newer.number, "previous_status": "awaiting_approval",
            "status": "superseded",
        })  # fmt: skip


class Migration(migrations.Migration):
    dependencies = [
        ("plans", "0007_proposal_progress"),
        ("audit", "0005_walk_gate"),
    ]

    operations = [
        migrations.AddField(
            model_name="planversion",
            name="superseded_by",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="supersedes",
                to="plans.planversion",
            ),
        ),
        migrations.AlterField(
            model_name="planversion",
            name="status",
            field=models.CharField(
                choices=[
                    ("draft", "Draft"),
                    ("has_errors", "Has Errors"),
                    ("awaiting_approval", "Awaiting Approval"),
                    ("approved", "Approved"),
                    ("rejected", "Rejected"),
                    ("changes_requested", "Changes Requested"),
                    ("superseded", "Superseded"),
                ],
                default="awaiting_approval",
                max_length=20,
            ),
        ),
        migrations.RunPython(supersede_stale_versions, migrations.RunPython.noop),
    ]
