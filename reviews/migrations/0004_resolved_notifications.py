"""Inbox items that ask a person to act resolve themselves once what they ask for no
longer waits (issue 25, ``reviews.resolution``). Items written before are settled once
here, by the same rules read from the state as it is now, in short (a frozen copy: a
migration must not follow the application's code as it changes)."""

from django.db import migrations, models
from django.utils import timezone

LIVE = ("queued", "running", "awaiting_approval")


def resolve_stale_asks(apps, schema_editor):
    Notification = apps.get_model("reviews", "Notification")
    PlanVersion = apps.get_model("plans", "PlanVersion")
    Run = apps.get_model("runs", "Run")
    StepRun = apps.get_model("runs", "StepRun")
    asks = Notification.objects.filter(
        resolved_at__isnull=True,
        kind__in=("version_submitted", "changes_requested", "step_waiting", "run_needs_replan"),
    )
    asked = PlanVersion.objects.filter(pk__in=asks.exclude(version_id=None).values("version_id"))
    versions = {v.pk: v for v in asked.select_related("superseded_by")}
    runs = {
        r.pk: r
        for r in Run.objects.filter(
            pk__in=asks.exclude(run_id=None).values("run_id")
        ).select_related("version")
    }
    newest: dict[int, int] = {}
    for plan_id, number in PlanVersion.objects.filter(submitted=True, has_errors=False).values_list(
        "plan_id", "number"
    ):
        newest[plan_id] = max(number, newest.get(plan_id, 0))
    waiting_steps = set(
        StepRun.objects.filter(status="awaiting_approval").values_list(
            "run_id", "plan_version", "step_id"
        )
    )
    now = timezone.now()
    for item in asks.iterator():
        why = ""
        version, run = versions.get(item.version_id), runs.get(item.run_id)
        if item.kind == "version_submitted" and version is not None:
            if version.status == "superseded":
                why = f"superseded by v{version.superseded_by.number}"
            elif version.status != "awaiting_approval":
                why = version.status.replace("_", " ")
        elif item.kind == "changes_requested" and version is not None:
            if newest.get(version.plan_id, 0) > version.number:
                why = f"answered by v{newest[version.plan_id]}"
            elif version.status != "changes_requested":
                why = version.status.replace("_", " ")
        elif run is not None and run.version.number != item.version_number:
            why = f"run #{run.pk} resumed on v{run.version.number}"
        elif run is not None and item.kind == "run_needs_replan":
            why = "" if run.status == "needs_replan" else f"run #{run.pk} {run.status}"
        elif run is not None and run.status not in LIVE:
            why = f"run #{run.pk} {run.status.replace('_', ' ')}"
        elif run is not None and not item.comment.startswith("milestone "):
            if (run.pk, item.version_number, item.step_id) not in waiting_steps:
                why = "no longer waits"
        if why:
            item.resolved_at, item.resolution = now, why[:200]
            item.save(update_fields=["resolved_at", "resolution"])


class Migration(migrations.Migration):
    dependencies = [
        ("reviews", "0003_step_needs_reconciliation"),
        ("plans", "0008_superseded"),
        ("runs", "0004_rerun_and_waits"),
    ]

    operations = [
        migrations.AddField(
            model_name="notification",
            name="resolution",
            field=models.CharField(blank=True, max_length=200),
        ),
        migrations.AddField(
            model_name="notification",
            name="resolved_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddIndex(
            model_name="notification",
            index=models.Index(
                condition=models.Q(("resolved_at__isnull", True)),
                fields=["plan_id"],
                name="notification_open_by_plan",
            ),
        ),
        migrations.AddIndex(
            model_name="notification",
            index=models.Index(
                condition=models.Q(("resolved_at__isnull", True)),
                fields=["run_id"],
                name="notification_open_by_run",
            ),
        ),
        migrations.RunPython(resolve_stale_asks, migrations.RunPython.noop),
    ]
