"""The browser's time format (static/forge/js/model/time.js) under Node's test runner, in
a time zone far from UTC (test_time_format.mjs): it writes each case of
tests/fixtures/utc_times.json as Django's date filter does (tests/web/test_utc_times.py)."""

from __future__ import annotations

from pathlib import Path

from .node_tests import run_node_test


def test_the_time_module_passes_its_node_tests(require_service, tmp_path: Path):
    require_service("node")
    result = run_node_test("test_time_format.mjs", tmp_path, env={"TZ": "Pacific/Auckland"})
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
