"""The editor's pure modules under Node's test runner (test_editor_model.mjs): which steps
an argument may take a value from and the paths their outputs offer, a reference typed
as text, finding a step, YAML comments kept through the graph's edits, and undo of
{document, layout}."""

from __future__ import annotations

from pathlib import Path

from .node_tests import run_node_test


def test_the_editor_model_modules_pass_their_node_tests(require_service, tmp_path: Path):
    require_service("node")
    # model/text.js and model/yaml-comments.js import js-yaml and yaml from static/vendor.
    result = run_node_test("test_editor_model.mjs", tmp_path, vendor=True)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
