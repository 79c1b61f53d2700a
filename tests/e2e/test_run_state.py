"""The run page's pure modules (static/forge/js/run/state.js and sequence.js) under
Node's test runner: folding events, the replan sets, snapshot plus events equal to the
whole history, and the sequencer's order, gaps and repeats (test_run_state.mjs)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]


def test_the_run_state_module_passes_its_node_tests(require_service, tmp_path: Path):
    require_service("node")
    node = shutil.which("node")
    assert node is not None
    # The modules are plain .js ES modules served to browsers. Node reads them as modules
    # beside a package.json saying so (Debian's Node 18 has no --experimental-default-type),
    # so the test and the modules are copied, at their relative places, under one.
    shutil.copytree(REPO / "static" / "forge" / "js", tmp_path / "static" / "forge" / "js")
    (tmp_path / "tests" / "e2e").mkdir(parents=True)
    shutil.copy(HERE / "test_run_state.mjs", tmp_path / "tests" / "e2e")
    (tmp_path / "package.json").write_text('{"type": "module"}\n')
    result = subprocess.run(
        [node, "--test", "tests/e2e/test_run_state.mjs"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
