"""The "New plan from a goal" page's pure model (static/forge/js/model/generation.js)
under Node's test runner: elapsed time, what the page says while the planner works, and
what it does once it answered (test_generation_model.mjs)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]


def test_the_generation_model_passes_its_node_tests(require_service, tmp_path: Path):
    require_service("node")
    node = shutil.which("node")
    assert node is not None
    # As tests/e2e/test_run_state.py: the modules and the test, copied under a package.json
    # that says they are ES modules.
    shutil.copytree(REPO / "static" / "forge" / "js", tmp_path / "static" / "forge" / "js")
    (tmp_path / "tests" / "e2e").mkdir(parents=True)
    shutil.copy(HERE / "test_generation_model.mjs", tmp_path / "tests" / "e2e")
    (tmp_path / "package.json").write_text('{"type": "module"}\n')
    result = subprocess.run(
        [node, "--test", "tests/e2e/test_generation_model.mjs"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
