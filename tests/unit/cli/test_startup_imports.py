"""What each ``forge`` command imports: a command loads the libraries it uses when it
runs, so ``forge --help`` and ``forge compile`` start in a fraction of the time that
``forge run``'s agents, models, HTTP client and graph library take to import (issue 13;
bench/startup.py times them). Asserted on ``sys.modules`` in a fresh interpreter, not on
a clock, so a busy machine cannot make these tests flaky."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]

# What neither --help nor compiling a JSON plan needs: running steps (agents, models, the
# runtime, the runners that perform calls), HTTP, MCP, YAML, and the graph and JSON
# Schema libraries that only a cycle or data between steps calls for.
HEAVY = (
    "forge.agents",
    "forge.models",
    "forge.planners",
    "forge.runtime",
    "forge.client",
    "forge.mcp_server",
    "forge.runners.files",
    "forge.runners.http",
    "forge.runners.sandbox",
    "forge.runners.search",
    "forge.runners.shell",
    "forge.runners.sql",
    "forge.runners.mcp_connection",
    "httpx",
    "mcp",
    "networkx",
    "jsonschema",
    "yaml",
    "concurrent.futures",
)

_PROBE = """
import contextlib, io, json, sys
from forge.cli import main
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    try:
        code = main(sys.argv[1:])
    except SystemExit as exit:
        code = exit.code
print(json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""


def loaded(*args: str) -> tuple[object, set[str]]:
    """The exit code of ``forge ARGS`` and every module loaded by then."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO", "FORGE_"))}
    result = subprocess.run(
        [sys.executable, "-c", _PROBE, *args],
        capture_output=True, text=True, env=env, cwd=REPO, timeout=60, check=True,
    )  # fmt: skip
    data = json.loads(result.stdout)
    return data["code"], set(data["modules"])


def heavy_in(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if any(m == h or m.startswith(f"{h}.") for h in HEAVY))


def test_help_imports_none_of_the_libraries_commands_use():
    code, modules = loaded("--help")
    assert code == 0
    assert heavy_in(modules) == []
    assert "forge.compiler" not in modules and "forge.toolbox" not in modules


def test_compiling_a_json_plan_imports_only_what_compiling_needs(tmp_path: Path):
    plan = tmp_path / "one.json"
    plan.write_text('{"goal": "one", "steps": [{"id": "a", "description": "x", "tool": "noop"}]}')
    code, modules = loaded("compile", str(plan))
    assert code == 0
    assert heavy_in(modules) == []
    assert {"forge.compiler", "forge.toolbox", "forge.plan.formats.json_io"} <= modules


# What running a plan of echo steps, without a planner and without MCP servers, does
# not need: an agent step needs a model (forge.agents, forge.models), a planner the
# planners' models, an http_request step httpx when it calls, MCP its client, and each
# other tool its own runner. The rich, click and pygments modules come with httpx's
# command line only.
NOT_FOR_A_PLAIN_RUN = (
    "forge.agents",
    "forge.models",
    "forge.planners.config",
    "forge.planners.llm",
    "forge.planners.scripted",
    "forge.planners.goal_script",
    "forge.runners.mcp_connection",
    "forge.runners.files",
    "forge.runners.http",
    "forge.runners.sandbox",
    "forge.runners.search",
    "forge.runners.shell",
    "forge.runners.sql",
    "forge.client",
    "forge.mcp_server",
    "forge.evaluation",
    "httpx",
    "mcp",
    "rich",
    "click",
    "pygments",
    "yaml",
)

THREE_ECHOES = json.dumps(
    {
        "goal": "three",
        "steps": [
            {"id": "a", "description": "say a", "tool": "echo", "args": {"text": "a"}},
            {"id": "b", "description": "say b", "tool": "echo", "args": {"text": "b"},
             "depends_on": ["a"]},
            {"id": "c", "description": "say c", "tool": "echo", "args": {"text": "c"},
             "depends_on": ["b"]},
        ],
    }
)  # fmt: skip


def test_running_a_plan_without_agent_steps_imports_no_model_http_client_or_mcp(
    tmp_path: Path,
):
    plan = tmp_path / "three.json"
    plan.write_text(THREE_ECHOES)
    code, modules = loaded("run", str(plan), "--approve-as", "bob")
    assert code == 0  # it ran, through the gate: bob approved the version
    needless = sorted(
        m for m in modules if any(m == n or m.startswith(f"{n}.") for n in NOT_FOR_A_PLAIN_RUN)
    )
    assert needless == []
    assert {"forge.runtime.local", "forge.runtime.gate", "forge.runners.basic"} <= modules


def test_running_a_plan_nobody_approved_stops_at_the_gate_without_a_model(tmp_path: Path):
    plan = tmp_path / "three.json"
    plan.write_text(THREE_ECHOES)
    code, modules = loaded("run", str(plan))
    assert code == 4  # waits for a person: nothing ran
    assert "forge.agents" not in modules and "httpx" not in modules


@pytest.mark.parametrize(
    ("plan", "library"),
    [
        # a cycle is reported with networkx's strongly connected components
        (
            '{"goal": "g", "steps": [{"id": "a", "tool": "noop", "depends_on": ["b"]},'
            ' {"id": "b", "tool": "noop", "depends_on": ["a"]}]}',
            "networkx",
        ),
        # data between steps is checked against the tool's schema with jsonschema
        (
            '{"goal": "g", "steps": [{"id": "a", "tool": "echo", "args": {"n": 1}},'
            ' {"id": "b", "tool": "echo", "depends_on": ["a"],'
            ' "args": {"m": {"$from": "a"}}}]}',
            "jsonschema",
        ),
    ],
)
def test_a_library_is_imported_when_a_plan_needs_it(tmp_path: Path, plan: str, library: str):
    path = tmp_path / "plan.json"
    path.write_text(plan)
    _, modules = loaded("compile", str(path))
    assert library in modules


def test_every_name_the_runners_package_exports_resolves():
    """``forge.runners`` loads its modules on first use of a name: each name must load."""
    import forge.runners

    for name in forge.runners.__all__:
        assert getattr(forge.runners, name) is not None, name


def test_the_clis_copy_of_the_planner_specs_is_the_planners_own():
    from forge.cli import PLANNER_SPECS
    from forge.planners.config import PLANNER_SPECS as OWN

    assert PLANNER_SPECS == OWN
