"""The largest id a record of Forge's may have: a 64-bit signed integer, which is what
PostgreSQL's ``bigint`` and SQLite's ``integer`` hold. Ids in paths and queries are
bounded by it, so a larger number is a 404 or a 422 rather than a query the database
refuses with an overflow."""

from __future__ import annotations

__all__ = ["MAX_ID"]

MAX_ID = 2**63 - 1
