"""Planners named the way a person types them, for ``FORGE_PLANNER`` and ``forge run
--planner`` alike.

- ``openai:MODEL`` (or its older spelling ``llm:MODEL``): an ``LLMPlanner`` over the
  model at an OpenAI-compatible ``Endpoint`` (``forge.models.config``: base URL, key
  from the environment only, timeout, price).
- ``scripted:FILE[,FILE...]``: a ``ScriptedPlanner`` handing out those plan documents
  (JSON or YAML, read with the import limits) in order, one per proposal; or, when the
  one FILE is a planner script (a mapping with ``answers``), a ``GoalScriptPlanner``
  answering any goal from it (``forge.planners.goal_script``: the demo's planner).

Anything else is ``PlannerSpecError`` (``invalid_planner_spec``); an unreadable file is
the reader's ``PlanDocumentError`` with its own code.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from forge.errors import ForgeError, PlanDocumentError
from forge.models.config import Endpoint, model_from_spec
from forge.plan import DEFAULT_LIMITS, ImportLimits, detect_format, load_plan
from forge.plan.formats.yaml_safe import parse_yaml
from forge.planners.goal_script import GoalScriptPlanner, is_goal_script
from forge.planners.llm import LLMPlanner
from forge.planners.port import PlannerPort
from forge.planners.scripted import ScriptedPlanner
from forge.tools.spec import ToolSpec

__all__ = ["PLANNER_SPECS", "PlannerSpecError", "planner_from_spec"]

PLANNER_SPECS = "openai:MODEL (llm:MODEL) or scripted:FILE[,FILE...]"


class PlannerSpecError(ForgeError, ValueError):
    code = "invalid_planner_spec"


def planner_from_spec(
    spec: str,
    endpoint: Endpoint | None = None,
    *,
    tools: Iterable[ToolSpec] = (),
    limits: ImportLimits = DEFAULT_LIMITS,
) -> PlannerPort:
    """The planner ``spec`` names, proposing plans over ``tools``."""
    kind, _, rest = spec.strip().partition(":")
    if kind in ("openai", "llm") and rest:
        return LLMPlanner(model_from_spec(f"openai:{rest}", endpoint), tools=tools)
    if kind == "scripted" and rest:
        name = f"scripted:{rest}"
        sources = [
            (Path(file.strip()), _source(Path(file.strip()), limits)) for file in rest.split(",")
        ]
        if len(sources) == 1:
            script = _script(*sources[0], limits)
            if script is not None:
                return GoalScriptPlanner.from_data(script, name=name, limits=limits)
        documents = [
            load_plan(source, detect_format(source, path.name), limits) for path, source in sources
        ]
        return ScriptedPlanner(documents, name=name)
    raise PlannerSpecError(f"a planner is {PLANNER_SPECS}, not {spec!r}")


def _source(path: Path, limits: ImportLimits) -> bytes:
    try:
        with path.open("rb") as stream:  # one byte past the limit, never the whole file
            return stream.read(limits.max_bytes + 1)
    except OSError as exc:
        raise PlannerSpecError(
            f"cannot read the planner's plan file {str(path)!r}: {exc.strerror}",
            code="planner_file_unreadable",
        ) from None


def _script(path: Path, source: bytes, limits: ImportLimits) -> object | None:
    """The parsed planner script in ``source``, or None when it is a plan document (left
    to ``load_plan``, which also says why text that is neither cannot be read)."""
    try:
        if len(source) > limits.max_bytes or detect_format(source, path.name) == "mermaid":
            return None
        data = parse_yaml(source.decode("utf-8"), limits)  # JSON is YAML too
    except (UnicodeDecodeError, PlanDocumentError):
        return None
    return data if is_goal_script(data) else None
