"""The editor's pure modules (static/forge/js/model/) under Node's test runner
(test_model.mjs): document edits, undo history, elements and ghosts, diagnostics paint,
text both ways, argument forms, the layered layout, the diff graph and an import's notes
kept beside each compile. They touch no DOM, so they need no browser."""

from __future__ import annotations

from pathlib import Path

from .node_tests import run_node_test


def test_the_model_modules_pass_their_node_tests(require_service, tmp_path: Path):
    require_service("node")
    result = run_node_test("test_model.mjs", tmp_path, vendor=True)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
