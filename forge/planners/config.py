"""Planners named the way a person types them, for ``FORGE_PLANNER`` and ``forge run
--planner`` alike.

- ``openai:MODEL`` (or its older spelling ``llm:MODEL``): an ``LLMPlanner`` over the
  model at an OpenAI-compatible ``Endpoint`` (``forge.models.config``: base URL, key
  from the environment only, timeout, price).
- ``scripted:FILE[,FILE...]``: a ``ScriptedPlanner`` handing out those plan documents
  (JSON or YAML, read with the import limits) in order, one per proposal.

Anything else is ``PlannerSpecError`` (``invalid_planner_spec``); an unreadable file is
the reader's ``PlanDocumentError`` with its own code.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from forge.errors import ForgeError
from forge.models.config import Endpoint, model_from_spec
from forge.plan import DEFAULT_LIMITS, ImportLimits, PlanDocument, detect_format, load_plan
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
        documents = [_read(Path(name.strip()), limits) for name in rest.split(",")]
        return ScriptedPlanner(documents, name=f"scripted:{rest}")
    raise PlannerSpecError(f"a planner is {PLANNER_SPECS}, not {spec!r}")


def _read(path: Path, limits: ImportLimits) -> PlanDocument:
    try:
        with path.open("rb") as stream:  # one byte past the limit, never the whole file
            source = stream.read(limits.max_bytes + 1)
    except OSError as exc:
        raise PlannerSpecError(
            f"cannot read the planner's plan file {str(path)!r}: {exc.strerror}",
            code="planner_file_unreadable",
        ) from None
    return load_plan(source, detect_format(source, path.name), limits)
