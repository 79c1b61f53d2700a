"""Planners: the PlannerPort and the scripted and LLM planners behind it."""

from forge.planners.port import Observation, PlannerPort, StructuredPlan
from forge.planners.scripted import PlannerExhausted, ScriptedPlanner

__all__ = ["Observation", "PlannerExhausted", "PlannerPort", "ScriptedPlanner", "StructuredPlan"]
