"""sql_read: one read-only query on a SQLite file of the workspace."""

from __future__ import annotations

import sqlite3

import pytest

from forge.runners import SqlReadRunner


@pytest.fixture
def database(workspace):
    path = workspace / "data.sqlite"
    with sqlite3.connect(path) as connection:
        connection.executescript(
            """
            create table contracts (supplier text, penalty real, scan blob);
            insert into contracts values ('ACME', 0.05, x'00ff'), ('Northwind', null, null);
            """
        )
    connection.close()
    return path


def query(spec, context, **args):
    return SqlReadRunner().run(spec("sql_read"), args, context)


def rows(path):
    with sqlite3.connect(path) as connection:
        return connection.execute("select supplier from contracts order by 1").fetchall()


def test_a_select_returns_columns_and_rows(spec, make_context, database):
    outcome = query(spec, make_context(), query="select * from contracts order by supplier")

    assert outcome.ok, outcome.error
    assert outcome.output == {
        "columns": ["supplier", "penalty", "scan"],
        "rows": [["ACME", 0.05, "AP8="], ["Northwind", None, None]],
        "truncated": False,
    }


def test_with_queries_and_leading_comments_are_reads_too(spec, make_context, database):
    outcome = query(
        spec,
        make_context(),
        query="-- suppliers\n/* all */ with s as (select supplier from contracts) "
        "select count(*) as n from s;",
    )

    assert outcome.output["rows"] == [[2]]


@pytest.mark.parametrize(
    "statement",
    ["delete from contracts", "drop table contracts", "pragma journal_mode=wal", "  "],
)
def test_statements_that_are_not_select_or_with_are_refused(
    spec, make_context, database, statement
):
    outcome = query(spec, make_context(), query=statement)

    assert outcome.error_code == "query_refused"
    assert rows(database) == [("ACME",), ("Northwind",)]


def test_a_with_that_writes_is_refused_by_sqlite_itself(spec, make_context, database):
    outcome = query(spec, make_context(), query="with d as (select 1) delete from contracts")

    assert outcome.error_code == "query_refused"
    assert rows(database) == [("ACME",), ("Northwind",)]


def test_the_schema_is_read_from_sqlite_master_and_pragmas_are_refused(
    spec, make_context, database
):
    schema = query(spec, make_context(), query="select name from sqlite_master")
    pragma = query(spec, make_context(), query="select * from pragma_table_info('contracts')")

    assert schema.output["rows"] == [["contracts"]]
    assert pragma.error_code == "query_refused"


def test_a_second_statement_is_refused(spec, make_context, database):
    outcome = query(spec, make_context(), query="select 1; delete from contracts")

    assert outcome.error_code == "multiple_statements"
    assert rows(database) == [("ACME",), ("Northwind",)]


def test_rows_are_capped_and_the_output_says_more_were_there(spec, make_context, database):
    outcome = query(spec, make_context(), query="select supplier from contracts", max_rows=1)

    assert outcome.output["rows"] == [["ACME"]]
    assert outcome.output["truncated"] is True


def test_the_database_defaults_to_data_sqlite_and_may_be_named(spec, make_context, workspace):
    (workspace / "db").mkdir()
    with sqlite3.connect(workspace / "db" / "other.sqlite") as connection:
        connection.execute("create table t (x)")
    connection.close()

    named = query(spec, make_context(), query="select count(*) from t", database="db/other.sqlite")
    missing = query(spec, make_context(), query="select 1")

    assert named.output["rows"] == [[0]]
    assert missing.error_code == "file_not_found"


def test_a_database_outside_the_workspace_is_refused(spec, make_context):
    outcome = query(spec, make_context(), query="select 1", database="../data.sqlite")

    assert outcome.error_code == "path_outside_workspace"


def test_a_file_that_is_not_sqlite_is_reported(spec, make_context, workspace):
    (workspace / "data.sqlite").write_text("just text, not a database " * 10)

    outcome = query(spec, make_context(), query="select 1 from sqlite_master")

    assert outcome.error_code == "not_a_database"


def test_a_query_past_the_deadline_is_interrupted(spec, make_context, database):
    endless = (
        "with recursive n(i) as (select 1 union all select i + 1 from n) select count(*) from n"
    )

    outcome = query(spec, make_context(timeout_s=0.3), query=endless)

    assert outcome.error_code == "timeout"


def test_a_sql_error_is_reported_with_sqlites_message(spec, make_context, database):
    outcome = query(spec, make_context(), query="select nope from contracts")

    assert outcome.error_code == "sql_error"
    assert outcome.error == "SQL error: no such column: nope"
