"""Helpers for audit tests: tamper with rows behind the application's back, read the
audit page's banner, and post to the page as a browser would."""

from __future__ import annotations

import re
from typing import Any

from django.db import connection, transaction


def tamper(sql: str, params: Any = ()) -> None:
    """Change audit rows with raw SQL, as an attacker with database access would (on
    PostgreSQL, past the append-only trigger, which such an attacker can drop)."""
    with transaction.atomic(), connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                "ALTER TABLE audit_auditevent DISABLE TRIGGER audit_auditevent_append_only"
            )
        cursor.execute(sql, params)
        if connection.vendor == "postgresql":
            cursor.execute(
                "ALTER TABLE audit_auditevent ENABLE TRIGGER audit_auditevent_append_only"
            )


def banner(response: Any) -> str:
    """The audit page's chain state: "ok", "pending" or "broken"."""
    match = re.search(rb'<section class="chain-state"[^>]*data-state="(\w+)"', response.content)
    assert match is not None, "no chain-state banner on the page"
    return match.group(1).decode()


def post_verify(client: Any, **data: str) -> Any:
    """The page's "Verify the whole chain" button (the client must have seen a page)."""
    return client.post(
        "/audit/verify/", {"csrfmiddlewaretoken": client.cookies["csrftoken"].value, **data}
    )
