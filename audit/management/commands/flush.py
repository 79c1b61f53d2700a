"""Django's ``flush``, able to empty the audit table on PostgreSQL.

The append-only trigger (migration 0002) refuses TRUNCATE unless the transaction sets
``forge.audit_allow_truncate``. ``flush`` empties every table on purpose (a test
database between tests, a development database), so it, and only it, sets that flag.
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
