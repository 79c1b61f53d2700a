"""The run page's pure modules (static/forge/js/run/state.js and sequence.js) under
Node's test runner: folding events, the replan sets, snapshot plus events equal to the
whole history, and the sequencer's order, gaps and repeats (test_run_state.mjs)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


def test_the_run_state_module_passes_its_node_tests():
    node = shutil.which("node")
    if node is None:
        pytest.skip("Node.js is not installed")
    result = subprocess.run(
        # The modules are plain .js ES modules served to browsers; Node needs to be told.
        [node, "--experimental-default-type=module", "--test", str(HERE / "test_run_state.mjs")],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=HERE.parents[1],
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
