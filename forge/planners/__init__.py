"""Planners: the PlannerPort and the scripted and LLM planners behind it."""

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
