"""The statements a worker makes for every step, their SQL written once per process, and
the batch that sends a transaction's writes together.

The ORM builds a statement anew each time it runs one: an UPDATE of a step's row cost
about 0.5 ms of CPU to build against 0.04 ms to run (SQLite, measured for issue 13), and
a step makes five such statements while it holds its run's lock, which the run's other
slots and workers wait for. These are the same statements, their SQL made from the
models' fields on first use. Values of columns the driver does not take as they are
(JSON, dates, UUIDs, bytes) go through their field's ``get_db_prep_save``, and columns
read back through the field's converters, so rows are written and read as the ORM writes
and reads them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from django.db import DEFAULT_DB_ALIAS, connections
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import Field, Model

__all__ = ["Batch", "Insert", "Locked", "Select", "Statement", "Update"]

# Values of these columns go to the driver as they are (what their fields' preparation
# would do to a str, int or float): no per-value call into the field.
_PLAIN = frozenset(
    {
        "AutoField",
        "BigAutoField",
        "BigIntegerField",
        "CharField",
        "FloatField",
        "IntegerField",
        "PositiveBigIntegerField",
        "PositiveIntegerField",
        "TextField",
    }
)

type _Prepare = Callable[[Any, BaseDatabaseWrapper], Any] | None


def _db() -> BaseDatabaseWrapper:
    return connections[DEFAULT_DB_ALIAS]


def _fields(model: type[Model], names: Sequence[str]) -> list[Field[Any, Any]]:
    # get_field takes a foreign key's attribute name (``run_id``) as well as its name.
    return [model._meta.get_field(name) for name in names]  # type: ignore[misc]


def _saving(field: Field[Any, Any]) -> _Prepare:
    return None if field.get_internal_type() in _PLAIN else field.get_db_prep_save


def _comparing(field: Field[Any, Any]) -> _Prepare:
    return None if field.get_internal_type() in _PLAIN else field.get_db_prep_value


def _prepared(prepare: Sequence[_Prepare], values: Sequence[Any], db: BaseDatabaseWrapper) -> list:
    return [
        value if how is None else how(value, db) for how, value in zip(prepare, values, strict=True)
    ]


def _table(model: type[Model]) -> str:
    return _db().ops.quote_name(model._meta.db_table)


@dataclass(frozen=True)
class Statement:
    """One statement with its parameters, prepared for the database (with ``many``, a
    list of parameter rows, the statement made once for each); ``check``, if given, is
    called with the rows it changed once it ran, and may raise."""

    sql: str
    params: Sequence[Any]
    check: Callable[[int], None] | None = None
    many: bool = False

    def checked(self, check: Callable[[int], None]) -> Statement:
        return Statement(self.sql, self.params, check, self.many)

    def send(self, cursor: Any) -> None:
        if self.many:
            cursor.executemany(self.sql, self.params)
        else:
            cursor.execute(self.sql, self.params)

    def verify(self, changed: int) -> None:
        if self.check is not None:
            self.check(changed)


@dataclass
class Batch:
    """The writes of one transaction that nothing in it reads, sent together before it
    commits: on PostgreSQL in one round trip (psycopg's pipeline mode: every statement
    sent, then every result read), elsewhere one after another. Each statement's check
    runs once the batch is sent; one that raises rolls the transaction back, every write
    with it."""

    statements: list[Statement] = field(default_factory=list)

    def add(self, *statements: Statement) -> None:
        self.statements.extend(statements)

    def send(self) -> None:
        pending, self.statements = self.statements, []
        if not pending:
            return
        db = _db()
        cursors = [_cursor(db) for _ in pending]
        try:
            if len(pending) > 1 and _pipelines(db):
                with db.wrap_database_errors, db.connection.pipeline():
                    for statement, cursor in zip(pending, cursors, strict=True):
                        statement.send(cursor)
            else:
                for statement, cursor in zip(pending, cursors, strict=True):
                    statement.send(cursor)
            for statement, cursor in zip(pending, cursors, strict=True):
                statement.verify(int(cursor.rowcount))
        finally:
            for cursor in cursors:
                cursor.close()


def _cursor(db: BaseDatabaseWrapper) -> Any:
    """A cursor for these statements. On PostgreSQL one that sends the parameters apart
    from the SQL (psycopg's ``Cursor``, Django's ``ServerBindingCursor``), where
    Django's default (``ClientCursor``) quotes every value into the statement's text on
    the worker: 6 to 9% less of the worker's CPU per step (issue 27, docs/benchmarks.md).
    Statements are not prepared: Django turns psycopg's preparing off (connection
    poolers), and the setting is the deployment's. Wrapped as Django wraps its own
    (errors, ``execute_wrapper``, the debug log)."""
    if db.vendor != "postgresql":
        return db.cursor()
    # Only a PostgreSQL deployment has psycopg, and this backend's cursor classes.
    from django.db.backends.postgresql.base import ServerBindingCursor

    db.ensure_connection()
    with db.wrap_database_errors:
        return db._prepare_cursor(ServerBindingCursor(db.connection))


def _pipelines(db: BaseDatabaseWrapper) -> bool:
    """Whether the connection sends statements without waiting for each result."""
    if db.vendor != "postgresql":
        return False
    import psycopg  # only a PostgreSQL deployment has it

    return bool(psycopg.Pipeline.is_supported())


class Update:
    """``UPDATE`` the rows of ``model`` whose ``where`` fields equal the values given and
    whose ``where_not`` fields differ from them, setting ``fields``."""

    def __init__(
        self,
        model: type[Model],
        fields: Sequence[str],
        where: Sequence[str],
        where_not: Sequence[str] = (),
    ) -> None:
        self._model = model
        self._names = tuple(fields)
        self._set = _fields(model, fields)
        self._where = _fields(model, [*where, *where_not])
        self._not = len(where_not)
        self._prepare = [_saving(f) for f in self._set] + [_comparing(f) for f in self._where]

    @cached_property
    def _sql(self) -> str:
        quote = _db().ops.quote_name
        assignments = ", ".join(f"{quote(f.column)} = %s" for f in self._set)
        equal = len(self._where) - self._not
        conditions = " AND ".join(
            f"{quote(f.column)} {'=' if i < equal else '<>'} %s" for i, f in enumerate(self._where)
        )
        return f"UPDATE {_table(self._model)} SET {assignments} WHERE {conditions}"

    def statement(self, values: Mapping[str, Any], *where: Any) -> Statement:
        """``values`` by the names the fields were given as (a foreign key's as
        ``name_id``, its value the key); ``where`` in the order of the ``where`` then
        ``where_not`` fields."""
        values = [*(values[n] for n in self._names), *where]
        return Statement(self._sql, _prepared(self._prepare, values, _db()))


class Insert:
    """``INSERT`` rows of ``model``, each a sequence of values in the order of ``fields``:
    one statement, made for each row (the driver sends them together)."""

    def __init__(self, model: type[Model], fields: Sequence[str]) -> None:
        self._model = model
        self._fields = _fields(model, fields)
        self._prepare = [_saving(f) for f in self._fields]

    @cached_property
    def _sql(self) -> str:
        columns = ", ".join(_db().ops.quote_name(f.column) for f in self._fields)
        values = ", ".join(["%s"] * len(self._fields))
        return f"INSERT INTO {_table(self._model)} ({columns}) VALUES ({values})"

    def statements(self, rows: Sequence[Sequence[Any]]) -> list[Statement]:
        """The statement for ``rows``; none for no rows."""
        if not rows:
            return []
        db = _db()
        params = [_prepared(self._prepare, row, db) for row in rows]
        return [Statement(self._sql, params, many=True)]


class Select:
    """``SELECT`` ``fields`` of the rows of ``model`` whose ``where`` fields equal the
    values given (and whose ``after`` field is greater than the next value, in its order;
    with ``limited``, at most as many as the last value given), each row a list of its
    values as the ORM reads them; with ``lock``, the rows locked for the rest of the
    transaction (``FOR UPDATE``; on SQLite the transaction's write lock already excludes
    every other writer)."""

    def __init__(
        self,
        model: type[Model],
        fields: Sequence[str],
        where: Sequence[str],
        *,
        after: str | None = None,
        limited: bool = False,
        lock: bool = False,
    ) -> None:
        self._model = model
        self._fields = _fields(model, fields)
        self._where = _fields(model, [*where, *([after] if after else [])])
        self._after = after is not None
        self._limited = limited
        self._lock = lock
        self._prepare = [_comparing(f) for f in self._where]

    @cached_property
    def _sql(self) -> str:
        db = _db()
        quote = db.ops.quote_name
        columns = ", ".join(quote(f.column) for f in self._fields)
        conditions = [f"{quote(f.column)} = %s" for f in self._where]
        order = ""
        if self._after:
            after = quote(self._where[-1].column)
            conditions[-1] = f"{after} > %s"
            order = f" ORDER BY {after}"
        if self._limited:
            order += " LIMIT %s"
        lock = " FOR UPDATE" if self._lock and db.features.has_select_for_update else ""
        where = " AND ".join(conditions)
        return f"SELECT {columns} FROM {_table(self._model)} WHERE {where}{order}{lock}"

    @cached_property
    def _converters(self) -> list[tuple[int, list[Any], Any]]:
        db, table = _db(), self._model._meta.db_table
        found = []
        for index, model_field in enumerate(self._fields):
            column = model_field.get_col(table)
            converters = db.ops.get_db_converters(column) + column.get_db_converters(db)
            if converters:
                found.append((index, converters, column))
        return found

    def rows(self, *where: Any) -> list[list[Any]]:
        db = _db()
        limit = [where[-1]] if self._limited else []
        params = _prepared(self._prepare, where[: len(where) - len(limit)], db) + limit
        with _cursor(db) as cursor:
            cursor.execute(self._sql, params)
            rows = [list(row) for row in cursor.fetchall()]
        for index, converters, column in self._converters:
            for values in rows:
                for convert in converters:
                    values[index] = convert(values[index], column, db)
        return rows


class Locked:
    """One row of ``model`` by primary key as a model instance, locked for the rest of
    the transaction."""

    def __init__(self, model: type[Model]) -> None:
        self._model = model
        self._names = [f.attname for f in model._meta.concrete_fields]
        pk = model._meta.pk.attname  # type: ignore[union-attr]
        self._select = Select(model, self._names, where=(pk,), lock=True)

    def __call__(self, pk: Any) -> Model:
        rows = self._select.rows(pk)
        if not rows:
            raise self._model.DoesNotExist(  # type: ignore[attr-defined]
                f"{self._model._meta.object_name} {pk} does not exist"
            )
        return self._model.from_db(_db().alias, self._names, rows[0])
