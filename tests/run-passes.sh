#!/usr/bin/env bash
# make test's two passes, side by side: every test on SQLite (the pytest command line given
# as arguments), and, in one more process beside it, the web tests whose code speaks to
# each database its own way, on PostgreSQL (POSTGRES_PASS in tests/web/conftest.py, and
# those marked `postgres`). The PostgreSQL pass mostly waits on its database, so beside
# the SQLite pass it costs little, where after it it added a minute or two to the run.
# Its output is printed once the SQLite pass is over; either failing fails the run.
set -uo pipefail
# Python's own default, whatever the shell says: the suite starts hundreds of Python
# processes (deployments' web and worker processes, the CLI, MCP servers, the test
# processes themselves), and with PYTHONDONTWRITEBYTECODE set each one compiled Forge's
# 300 modules and every test file again (0.2 to 0.3 s of CPU a process).
unset PYTHONDONTWRITEBYTECODE
pytest=("$@")
python="${pytest[0]}"
pg="${FORGE_TEST_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/test}"
marks="(postgres or postgres_pass) and not slow"

pg_pid=""
pg_log="$(mktemp)"
trap 'rm -f "$pg_log"; [ -n "$pg_pid" ] && kill "$pg_pid" 2>/dev/null' EXIT
if "$python" -c 'import sys, psycopg; psycopg.connect(sys.argv[1], connect_timeout=3).close()' "$pg" 2>/dev/null; then
  echo "--- on PostgreSQL ($pg), beside the SQLite pass: tests/web -m \"$marks\" (its output follows the SQLite pass's)"
  DATABASE_URL="$pg" "${pytest[@]}" -n 1 -m "$marks" tests/web >"$pg_log" 2>&1 &
  pg_pid=$!
elif [ "${FORGE_REQUIRE_SERVICES:-}" = 1 ]; then
  echo "PostgreSQL does not answer at $pg, and FORGE_REQUIRE_SERVICES=1" >&2
  exit 1
else
  echo "--- SKIPPED the PostgreSQL pass: nothing answers at $pg (start PostgreSQL or set FORGE_TEST_DATABASE_URL; FORGE_REQUIRE_SERVICES=1 makes this an error)"
fi

echo "--- on SQLite: every test"
env -u DATABASE_URL "${pytest[@]}"
sqlite_status=$?

pg_status=0
if [ -n "$pg_pid" ]; then
  wait "$pg_pid"
  pg_status=$?
  pg_pid=""
  echo "--- the PostgreSQL pass ($pg):"
  cat "$pg_log"
fi
[ "$sqlite_status" = 0 ] && [ "$pg_status" = 0 ]
