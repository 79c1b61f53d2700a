"""Running a pure front-end module's tests under Node's test runner (``node --test``)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]


def run_node_test(
    name: str, tmp_path: Path, env: dict[str, str] | None = None, *, vendor: bool = False
) -> subprocess.CompletedProcess[str]:
    """Run ``tests/e2e/<name>`` (an ``.mjs`` file) against ``static/forge/js``, with
    ``env`` added to the environment; ``vendor`` copies ``static/vendor`` too, for the
    modules that import a vendored library (model/text.js imports js-yaml).

    The modules are plain .js ES modules served to browsers. Node reads them as modules
    beside a package.json saying so (Debian's Node 18 has no --experimental-default-type),
    so the test and the modules are copied, at their relative places, under one."""
    node = shutil.which("node")
    assert node is not None
    shutil.copytree(REPO / "static" / "forge" / "js", tmp_path / "static" / "forge" / "js")
    if vendor:
        shutil.copytree(REPO / "static" / "vendor", tmp_path / "static" / "vendor")
    (tmp_path / "tests" / "e2e").mkdir(parents=True)
    shutil.copy(HERE / name, tmp_path / "tests" / "e2e")
    # Cases a module shares with the core's tests (tests/fixtures/blocked_reasons.json).
    shutil.copytree(
        REPO / "tests" / "fixtures", tmp_path / "tests" / "fixtures",
        ignore=shutil.ignore_patterns("*.py", "__pycache__"),
    )  # fmt: skip
    (tmp_path / "package.json").write_text('{"type": "module"}\n')
    return subprocess.run(
        [node, "--test", f"tests/e2e/{name}"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        env={**os.environ, **(env or {})},
    )
