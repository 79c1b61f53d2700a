"""Planners: the PlannerPort and the scripted and LLM planners behind it."""

from typing import TYPE_CHECKING

from forge.lazy_exports import lazy_exports

# Each name is imported from its module on first use (PEP 562), so that a run, which
# needs only the port, does not import the LLM planner's models and HTTP client at
# start-up (tests/unit/cli/test_startup_imports.py).
if TYPE_CHECKING:
    from forge.planners.llm import LLMPlanner, PlannerOutputInvalid
    from forge.planners.port import Feedback, Observation, PlannerPort, StructuredPlan
    from forge.planners.scripted import PlannerExhausted, ScriptedPlanner

__all__ = [
    "Feedback",
    "LLMPlanner",
    "Observation",
    "PlannerExhausted",
    "PlannerOutputInvalid",
    "PlannerPort",
    "ScriptedPlanner",
    "StructuredPlan",
]

_WHERE = {
    "LLMPlanner": "forge.planners.llm",
    "PlannerOutputInvalid": "forge.planners.llm",
    "Feedback": "forge.planners.port",
    "Observation": "forge.planners.port",
    "PlannerPort": "forge.planners.port",
    "StructuredPlan": "forge.planners.port",
    "PlannerExhausted": "forge.planners.scripted",
    "ScriptedPlanner": "forge.planners.scripted",
}

__getattr__ = lazy_exports(__name__, _WHERE)
