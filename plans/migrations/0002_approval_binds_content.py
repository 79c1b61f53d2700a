"""Approvals bind the content they approved, signed (plans.gate): existing approvals are
signed once, for the content their version has now."""

import sys

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


def sign_existing_approvals(apps, schema_editor):
    from forge.plan import ImportLimits, content_hash, from_data
    from plans.gate import approval_signer

    limits = ImportLimits(max_bytes=sys.maxsize, max_steps=sys.maxsize)
    Approval = apps.get_model("plans", "Approval")
    approvals = Approval.objects.filter(decision="approved").select_related(
        "version", "version__author", "reviewer"
    )
    for approval in approvals.iterator():
        version = approval.version
        digest = content_hash(from_data(version.document, limits))
        fields = (
            str(version.plan_id),
            str(version.number),
            digest,
            version.author.username,
            approval.reviewer.username,
            "person",
        )
        approval.content_hash = digest
        approval.signature = approval_signer().sign("version", *fields)
        approval.save(update_fields=["content_hash", "signature"])


class Migration(migrations.Migration):
    dependencies = [
        ("plans", "0001_initial"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name="approval",
            name="by_policy",
            field=models.BooleanField(default=False),
        ),
        migrations.AddField(
            model_name="approval",
            name="content_hash",
            field=models.CharField(blank=True, max_length=64),
        ),
        migrations.AddField(
            model_name="approval",
            name="signature",
            field=models.CharField(blank=True, max_length=64),
        ),
        migrations.AlterField(
            model_name="approval",
            name="reviewer",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="plan_approvals",
                to=settings.AUTH_USER_MODEL,
            ),
        ),
        migrations.RunPython(sign_existing_approvals, migrations.RunPython.noop),
    ]
