"""Models: the ``ModelPort`` agents and the LLM planner talk to, and its adapters."""

from forge.models.config import model_from_spec
from forge.models.openai import OpenAICompatibleModel
from forge.models.port import Message, ModelError, ModelPort, ModelReply, ToolCall
from forge.models.scripted import ModelCall, ScriptedModel, ScriptError

__all__ = [
    "Message",
    "ModelCall",
    "ModelError",
    "ModelPort",
    "ModelReply",
    "OpenAICompatibleModel",
    "ScriptError",
    "ScriptedModel",
    "ToolCall",
    "model_from_spec",
]
