"""The row that lets one full walk of the chain run at a time is a lock, not a gate:
``WalkGate`` is renamed ``WalkLock`` (issue 26: one thing is called the gate)."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("audit", "0006_truncate_only_by_a_superuser")]

    operations = [migrations.RenameModel("WalkGate", "WalkLock")]
