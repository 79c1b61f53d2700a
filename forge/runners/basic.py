"""The runner of the side-effect-free built-ins: ``noop``, ``echo``, ``sleep`` and ``fail``.

They exist for tests, demos and plans that only shape data, so they run in-process.
``sleep`` honours the step's timeout like a real tool would: it sleeps until the
timeout and then fails with ``timeout`` rather than overstaying.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from forge.runners.base import RunContext, RunnerOutcome
from forge.runners.errors import UnsupportedTool
from forge.tools.spec import ToolSpec

__all__ = ["BASIC_TOOLS", "BasicRunner"]

BASIC_TOOLS = ("noop", "echo", "sleep", "fail")


class BasicRunner:
    def run(self, tool: ToolSpec, args: Mapping[str, Any], context: RunContext) -> RunnerOutcome:
        if tool.name == "noop":
            return RunnerOutcome.success({})
        if tool.name == "echo":
            return RunnerOutcome.success(dict(args))
        if tool.name == "sleep":
            return _sleep(float(args["seconds"]), context.timeout_s)
        if tool.name == "fail":
            return RunnerOutcome.failure(str(args["message"]), "tool_failed")
        error = UnsupportedTool(f"the basic runner does not run {tool.name!r}")
        return RunnerOutcome.failure(str(error), error.code)


def _sleep(seconds: float, timeout_s: float) -> RunnerOutcome:
    if seconds > timeout_s:
        time.sleep(timeout_s)
        return RunnerOutcome.failure(
            f"sleep of {seconds:g}s exceeded the {timeout_s:g}s timeout", "timeout"
        )
    time.sleep(seconds)
    return RunnerOutcome.success({"slept": seconds})
