"""Tools from installed distributions: found through the ``forge.tools`` entry points
of a real ``.dist-info`` (the sample package under fixtures/site), then run."""

from __future__ import annotations

import textwrap

import pytest

from forge.runners import ToolLoadFailed, discover_python_tools
from forge.tools import ToolRegistry


@pytest.fixture
def sample_tools(sample_tools_installed):
    return {spec.name: (spec, runner) for spec, runner in discover_python_tools()}


def _install(site, name, entry_points, module_source):
    """Lay out a one-module distribution in ``site`` the way pip would."""
    (site / f"{name}.py").write_text(textwrap.dedent(module_source))
    info = site / f"{name}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[forge.tools]\n" + entry_points)


def test_installed_tools_are_discovered_with_their_specs(sample_tools):
    assert {"sample.add", "sample.explode", "sample.opaque", "sample.slow"} <= set(sample_tools)
    spec, _ = sample_tools["sample.add"]
    assert spec.permission_scope == "compute"
    assert spec.source == "python:forge_sample_tools:add"
    ToolRegistry([spec])  # a discovered spec is a valid registry entry


def test_a_discovered_tool_runs_with_its_arguments_and_context(sample_tools, make_context):
    spec, runner = sample_tools["sample.add"]

    outcome = runner.run(spec, {"a": 2, "b": 3}, make_context(step_id="adding"))

    assert outcome.ok
    assert outcome.output == {"sum": 5, "step": "adding"}


def test_a_tool_that_raises_fails_the_step_with_its_message(sample_tools, make_context):
    spec, runner = sample_tools["sample.explode"]

    outcome = runner.run(spec, {}, make_context())

    assert outcome.error_code == "tool_failed"
    assert outcome.error == "ValueError: the sample tool exploded"


def test_a_tool_that_overstays_its_timeout_fails_with_timeout(sample_tools, make_context):
    spec, runner = sample_tools["sample.slow"]

    outcome = runner.run(spec, {"seconds": 2}, make_context(timeout_s=0.2))

    assert outcome.error_code == "timeout"
    assert outcome.notes == ("the function keeps running in its thread; Python cannot stop it",)


def test_an_output_that_is_not_json_fails_the_step(sample_tools, make_context):
    spec, runner = sample_tools["sample.opaque"]

    outcome = runner.run(spec, {}, make_context())

    assert outcome.error_code == "invalid_output"


def test_an_entry_point_that_cannot_be_imported_is_named(tmp_path, monkeypatch):
    _install(tmp_path, "broken_tools", "broken.tool = broken_tools:missing\n", "x = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))

    with pytest.raises(ToolLoadFailed) as caught:
        discover_python_tools()

    assert caught.value.code == "tool_load_failed"
    assert "entry point 'broken.tool' (broken_tools:missing) cannot be loaded" in str(caught.value)


def test_an_entry_point_whose_spec_has_another_name_is_refused(tmp_path, monkeypatch):
    source = """
        from forge.runners import python_tool
        from forge.tools import ToolSpec

        @python_tool(ToolSpec(name="real.name", description="", args_schema={},
                              permission_scope="compute"))
        def tool(args, context):
            return {}
    """
    _install(tmp_path, "misnamed_tools", "other.name = misnamed_tools:tool\n", source)
    monkeypatch.syspath_prepend(str(tmp_path))

    with pytest.raises(ToolLoadFailed, match="provides tool 'real.name'; the names must match"):
        discover_python_tools()
