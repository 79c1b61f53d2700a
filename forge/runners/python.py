"""Tools written in Python and installed as packages, found through entry points.

A distribution declares its tools in the ``forge.tools`` entry-point group; each entry
point names an object made by the ``python_tool`` decorator, which pairs a
``ToolSpec`` (whose name must equal the entry point's) with a function
``(args, context) -> output``. The function runs in-process, in a thread, so the
timeout is honoured by no longer waiting for it: Python cannot stop a thread, so a
tool that overstays keeps running in the background and must not be trusted to end.
"""

from __future__ import annotations

import dataclasses
import json
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib.metadata import EntryPoint, entry_points
from typing import Any, Protocol

from forge.runners.base import RunContext, Runner, RunnerOutcome
from forge.runners.errors import RunnerError, ToolLoadFailed
from forge.tools.spec import ToolSpec

__all__ = [
    "ENTRY_POINT_GROUP",
    "PythonTool",
    "PythonToolRunner",
    "discover_python_tools",
    "python_tool",
]

ENTRY_POINT_GROUP = "forge.tools"

ToolFunction = Callable[[Mapping[str, Any], RunContext], Any]


class PythonTool(Protocol):
    """What a ``forge.tools`` entry point must load: a spec and a callable."""

    @property
    def spec(self) -> ToolSpec: ...

    def __call__(self, args: Mapping[str, Any], context: RunContext) -> Any: ...


@dataclass(frozen=True)
class _DeclaredTool:
    spec: ToolSpec
    function: ToolFunction

    def __call__(self, args: Mapping[str, Any], context: RunContext) -> Any:
        return self.function(args, context)


def python_tool(spec: ToolSpec) -> Callable[[ToolFunction], PythonTool]:
    """Declare ``function`` as the implementation of ``spec``.

    The function returns the output (JSON-serialisable) or a ``RunnerOutcome``; it
    reports a failure by raising (``RunnerError`` to choose the error code).
    """

    def declare(function: ToolFunction) -> PythonTool:
        return _DeclaredTool(spec, function)

    return declare


class PythonToolRunner:
    def __init__(self, tool: PythonTool) -> None:
        self.tool = tool

    def run(self, tool: ToolSpec, args: Mapping[str, Any], context: RunContext) -> RunnerOutcome:
        box: list[Any] = []
        done = threading.Event()

        def call() -> None:
            try:
                box.append(self.tool(args, context))
            except BaseException as exc:  # reported, not raised: the caller is another thread
                box.append(exc)
            finally:
                done.set()

        thread = threading.Thread(target=call, name=f"forge-tool-{tool.name}", daemon=True)
        thread.start()
        if not done.wait(context.timeout_s):
            return RunnerOutcome.failure(
                f"{tool.name} did not return within the {context.timeout_s:g}s timeout",
                "timeout",
                notes=("the function keeps running in its thread; Python cannot stop it",),
            )
        return _outcome(box[0])


def _outcome(result: Any) -> RunnerOutcome:
    if isinstance(result, RunnerOutcome):
        return result
    if isinstance(result, RunnerError):
        return RunnerOutcome.failure(str(result) or result.code, result.code)
    if isinstance(result, BaseException):
        return RunnerOutcome.failure(f"{type(result).__name__}: {result}", "tool_failed")
    try:
        json.dumps(result)
    except (TypeError, ValueError) as exc:
        return RunnerOutcome.failure(f"output is not JSON: {exc}", "invalid_output")
    return RunnerOutcome.success(result)


def discover_python_tools(group: str = ENTRY_POINT_GROUP) -> list[tuple[ToolSpec, Runner]]:
    """Every tool installed in ``group``, sorted by name, each with its runner.

    Raises ``ToolLoadFailed`` naming the entry point that cannot be imported, does
    not provide a ``ToolSpec`` and a callable, or whose name differs from its spec's.
    """
    loaded = [(entry_point.value, _load(entry_point)) for entry_point in entry_points(group=group)]
    names = [tool.spec.name for _, tool in loaded]
    if duplicates := sorted({name for name in names if names.count(name) > 1}):
        raise ToolLoadFailed(f"tool(s) declared twice in {group!r}: {', '.join(duplicates)}")
    found: list[tuple[ToolSpec, Runner]] = [
        (dataclasses.replace(tool.spec, source=f"python:{value}"), PythonToolRunner(tool))
        for value, tool in loaded
    ]
    return sorted(found, key=lambda pair: pair[0].name)


def _load(entry_point: EntryPoint) -> PythonTool:
    where = f"entry point {entry_point.name!r} ({entry_point.value})"
    try:
        loaded = entry_point.load()
    except Exception as exc:
        raise ToolLoadFailed(f"{where} cannot be loaded: {type(exc).__name__}: {exc}") from exc
    spec = getattr(loaded, "spec", None)
    if not isinstance(spec, ToolSpec) or not callable(loaded):
        raise ToolLoadFailed(f"{where} is not a tool: declare it with forge.runners.python_tool")
    if spec.name != entry_point.name:
        raise ToolLoadFailed(f"{where} provides tool {spec.name!r}; the names must match")
    tool: PythonTool = loaded
    return tool
