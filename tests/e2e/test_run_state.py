"""The run page's pure modules (static/forge/js/run/state.js and sequence.js) under
Node's test runner: folding events, the replan sets, snapshot plus events equal to the
whole history, the sequencer's order, gaps and repeats, and the timeline's axis marks
(test_run_state.mjs)."""

from __future__ import annotations

from pathlib import Path

from .node_tests import run_node_test


def test_the_run_state_module_passes_its_node_tests(require_service, tmp_path: Path):
    require_service("node")
    result = run_node_test("test_run_state.mjs", tmp_path)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
