"""The step-details model (static/forge/js/model/step-details.js) under Node's test
runner: every field of a step as a row, references shown as references (step, path, the
raw operator), absent fields named, resolved values when a run gave them, the approval
reason from the diagnostics, and node labels that wrap rather than cut
(test_step_details.mjs)."""

from __future__ import annotations

from pathlib import Path

from .node_tests import run_node_test


def test_the_step_details_model_passes_its_node_tests(require_service, tmp_path: Path):
    require_service("node")
    result = run_node_test("test_step_details.mjs", tmp_path)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
