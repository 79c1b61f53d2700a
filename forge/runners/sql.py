"""The ``sql_read`` runner: one read-only query on a SQLite file of the workspace.

Read-only three times over: the statement must start with ``SELECT`` or ``WITH`` (a
clear refusal for the obvious cases), the file is opened with ``mode=ro`` and
``query_only``, and an authorizer allows only reading (so ``WITH ... DELETE``, ``ATTACH``
or a pragma are refused by SQLite itself; ``sqlite_master`` describes the schema). One statement
only; rows are capped (``truncated`` says more were there); a progress handler stops
the query at the step's deadline. BLOB values come back as base64 text.
"""

from __future__ import annotations

import base64
import re
import sqlite3
import time
from collections.abc import Mapping
from typing import Any

from forge.runners.base import RunContext, RunnerOutcome
from forge.runners.errors import NotAFile, RunnerError, WorkspaceFileMissing
from forge.runners.workspace import Workspace
from forge.tools.spec import ToolSpec

__all__ = ["SqlReadRunner"]

DEFAULT_DATABASE = "data.sqlite"
_LEADING = re.compile(r"(?:\s+|--[^\n]*(?:\n|$)|/\*.*?\*/)*", re.DOTALL)
_FIRST_WORD = re.compile(r"[A-Za-z]+")
_ALLOWED = frozenset(
    {sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION, sqlite3.SQLITE_RECURSIVE}
)


class SqlReadRunner:
    def __init__(self, *, default_max_rows: int = 1000) -> None:
        self.default_max_rows = default_max_rows

    def run(self, tool: ToolSpec, args: Mapping[str, Any], context: RunContext) -> RunnerOutcome:
        query = str(args["query"])
        max_rows = int(args.get("max_rows") or self.default_max_rows)
        keyword = _first_keyword(query)
        if keyword not in ("SELECT", "WITH"):
            return RunnerOutcome.failure(
                f"sql_read runs only SELECT or WITH queries, not {keyword or 'an empty query'}",
                "query_refused",
                isolation="workspace",
            )
        try:
            workspace = Workspace(context.workspace)
            name = workspace.relative(str(args.get("database") or DEFAULT_DATABASE))
            path = workspace.resolve(name)
            if not path.exists():
                raise WorkspaceFileMissing(f"{name!r} does not exist in the workspace")
            if not path.is_file():
                raise NotAFile(f"{name!r} is not a regular file")
            output = _query(path.as_uri(), query, max_rows, time.monotonic() + context.timeout_s)
        except RunnerError as error:
            return RunnerOutcome.failure(str(error), error.code, isolation="workspace")
        return RunnerOutcome.success(output, isolation="workspace")


def _first_keyword(query: str) -> str:
    leading = _LEADING.match(query)  # matches every string, if only the empty prefix
    word = _FIRST_WORD.match(query, leading.end() if leading else 0)
    return word.group(0).upper() if word else ""


def _query(uri: str, query: str, max_rows: int, deadline: float) -> dict[str, Any]:
    try:
        connection = sqlite3.connect(f"{uri}?mode=ro", uri=True, isolation_level=None)
    except sqlite3.Error as exc:
        raise RunnerError(f"cannot open the database: {exc}", code="not_a_database") from None
    try:
        connection.execute("PRAGMA query_only = ON")
        connection.set_authorizer(_authorize)
        connection.set_progress_handler(lambda: int(time.monotonic() > deadline), 1000)
        cursor = connection.execute(query)
        rows = cursor.fetchmany(max_rows + 1)
        columns = [column[0] for column in cursor.description or ()]
    except sqlite3.ProgrammingError as exc:
        if "one statement at a time" in str(exc):
            raise RunnerError(
                "sql_read runs one statement at a time", code="multiple_statements"
            ) from None
        raise RunnerError(f"SQL error: {exc}", code="sql_error") from None
    except sqlite3.DatabaseError as exc:
        raise _translate(exc) from None
    finally:
        connection.close()
    return {
        "columns": columns,
        "rows": [[_value(cell) for cell in row] for row in rows[:max_rows]],
        "truncated": len(rows) > max_rows,
    }


def _authorize(action: int, *_: str | None) -> int:
    return sqlite3.SQLITE_OK if action in _ALLOWED else sqlite3.SQLITE_DENY


def _translate(exc: sqlite3.DatabaseError) -> RunnerError:
    message = str(exc)
    if message == "interrupted":
        return RunnerError("the query did not finish before the step's deadline", code="timeout")
    if "not authorized" in message:
        return RunnerError(f"the query tries more than reading ({message})", code="query_refused")
    if "file is not a database" in message:
        return RunnerError("the file is not a SQLite database", code="not_a_database")
    return RunnerError(f"SQL error: {message}", code="sql_error")


def _value(cell: Any) -> Any:
    return base64.b64encode(cell).decode() if isinstance(cell, bytes) else cell
