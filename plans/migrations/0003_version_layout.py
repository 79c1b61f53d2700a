"""Versions keep where the author placed the steps (layout metadata, outside the content
hash): {} for the automatic layout."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("plans", "0002_approval_binds_content"),
    ]

    operations = [
        migrations.AddField(
            model_name="planversion",
            name="layout",
            field=models.JSONField(blank=True, default=dict),
        ),
    ]
