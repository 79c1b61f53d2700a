"""The values the trail holds (actors, actions, object types, recent object ids), for
filters that pick from what exists, and filter values matched without regard to case.

Distinct values are read with a loose index scan (a recursive query that jumps from one
value to the next through the column's index), so listing the few dozen actions of a
million-row trail reads a few dozen index entries, not a million rows; it runs the same
on SQLite and PostgreSQL. A filter value is matched against these lists case-insensitively
and the query then filters on the stored spellings (``IN``), which the indexes serve, where
``iexact`` would read every row.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from django.db import connections, router

from audit.models import AuditEvent

# The columns whose distinct values are listed; the names go into SQL, hence the list.
COLUMNS = ("actor", "action", "object_type")
# Object ids offered for picking: the distinct ids among this many newest events.
RECENT_EVENTS = 2000
RECENT_IDS = 200


@dataclass(frozen=True)
class Vocabulary:
    actors: tuple[str, ...]
    actions: tuple[str, ...]
    object_types: tuple[str, ...]

    def as_dict(self) -> dict[str, list[str]]:
        return {
            "actors": list(self.actors),
            "actions": list(self.actions),
            "object_types": list(self.object_types),
        }


def vocabulary() -> Vocabulary:
    return Vocabulary(distinct("actor"), distinct("action"), distinct("object_type"))


def distinct(column: str) -> tuple[str, ...]:
    """Every value of ``column`` in the trail, sorted without regard to case."""
    if column not in COLUMNS:
        raise ValueError(f"not a listed column: {column!r}")
    table = AuditEvent._meta.db_table
    sql = (
        f"WITH RECURSIVE found(value) AS ("
        f" SELECT MIN({column}) FROM {table}"
        f" UNION ALL"
        f" SELECT (SELECT MIN({column}) FROM {table} WHERE {column} > found.value)"
        f" FROM found WHERE found.value IS NOT NULL"
        f") SELECT value FROM found WHERE value IS NOT NULL"
    )
    with connections[router.db_for_read(AuditEvent)].cursor() as cursor:
        cursor.execute(sql)
        values = [row[0] for row in cursor.fetchall()]
    return tuple(sorted(values, key=lambda value: (value.casefold(), value)))


def recent_object_ids(object_type: str = "") -> tuple[str, ...]:
    """The distinct object ids of the newest events (of ``object_type``, when given)."""
    rows = AuditEvent.objects.order_by("-seq")
    if object_type:
        rows = rows.filter(object_type__in=spellings("object_type", [object_type]))
    seen: dict[str, None] = {}
    for value in rows.values_list("object_id", flat=True)[:RECENT_EVENTS]:
        if value:
            seen.setdefault(value, None)
        if len(seen) >= RECENT_IDS:
            break
    return tuple(seen)


def spellings(column: str, values: Iterable[str]) -> list[str]:
    """The stored values of ``column`` equal to one of ``values`` without regard to case
    (an empty list when none is)."""
    wanted = {value.casefold() for value in values if value}
    return [value for value in distinct(column) if value.casefold() in wanted]
