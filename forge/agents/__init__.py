"""Agents: run a plan's agent steps with a model, every call through the ToolExecutor."""

from forge.agents.runner import AgentRunner

__all__ = ["AgentRunner"]
