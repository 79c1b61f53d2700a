"""Django's ``flush``, able to empty the audit table on PostgreSQL as a superuser.

The append-only trigger (migrations 0002 and 0006) refuses TRUNCATE unless the
transaction sets ``forge.audit_allow_truncate`` and runs as a superuser (who could drop
the trigger anyway). ``flush`` empties every table on purpose (a test database between
tests, a development database), so it sets that flag; run as any other role, it is
refused at the audit table and nothing is emptied.
"""

from __future__ import annotations

from typing import Any

from django.core.management.commands import flush
from django.db import connections, transaction


class Command(flush.Command):
    def handle(self, **options: Any) -> None:
        database = options["database"]
        connection = connections[database]
        if connection.vendor != "postgresql":
            super().handle(**options)
            return
        with transaction.atomic(using=database):
            with connection.cursor() as cursor:
                cursor.execute("SET LOCAL forge.audit_allow_truncate = 'on'")
            super().handle(**options)
