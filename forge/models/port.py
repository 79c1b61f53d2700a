"""The model seam: chat messages and tool specs in, a ``ModelReply`` out.

A model only proposes: text, or tool calls by name with arguments. It never holds a
runner or an executor; the agent binds each proposed call and hands it to the
ToolExecutor, and the planner validates the text as a plan document. Adapters turn this
shape into a provider's wire format (``OpenAICompatibleModel``) or replay prepared
replies (``ScriptedModel``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from forge.errors import ForgeError
from forge.tools.spec import ToolSpec

__all__ = ["Message", "ModelError", "ModelPort", "ModelReply", "Role", "ToolCall"]

Role = Literal["system", "user", "assistant", "tool"]


class ModelError(ForgeError, RuntimeError):
    """A model call that gave no usable reply. ``code`` says why: ``model_http_error``
    (``status`` holds the HTTP status), ``model_timeout``, ``model_unreachable``,
    ``model_invalid_response``, ``model_exhausted`` (a scripted model ran out)."""

    code = "model_error"

    def __init__(self, message: str, *, code: str | None = None, status: int | None = None):
        super().__init__(message, code=code)
        self.status = status


@dataclass(frozen=True)
class ToolCall:
    """A call the model proposes. ``error`` says why its arguments could not be read
    (not JSON, not an object); such a call is refused and the model told so."""

    id: str
    name: str
    arguments: Mapping[str, Any] = field(default_factory=dict)
    error: str = ""


@dataclass(frozen=True)
class Message:
    role: Role
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str = ""  # for role "tool": the call this message answers

    @classmethod
    def system(cls, content: str) -> Message:
        return cls("system", content)

    @classmethod
    def user(cls, content: str) -> Message:
        return cls("user", content)

    @classmethod
    def tool(cls, call_id: str, content: str) -> Message:
        return cls("tool", content, tool_call_id=call_id)


@dataclass(frozen=True)
class ModelReply:
    """One completion: text and/or tool calls, with what it cost. ``model`` is the
    model that answered, as the endpoint names it. ``tokens`` is the whole use, which
    budgets count; ``input_tokens`` and ``output_tokens`` its parts where the endpoint
    says them (0 where it does not), which traces report."""

    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tokens: int = 0
    cost: float = 0.0
    model: str = ""
    input_tokens: int = 0
    output_tokens: int = 0

    def as_message(self) -> Message:
        return Message("assistant", self.content, self.tool_calls)


class ModelPort(Protocol):
    """A chat model. ``name`` identifies it in run records (``openai:gpt-4o-mini``).

    ``complete`` offers ``tools`` (their ``args_schema`` as the parameters) and, when
    given, asks for ``response_format`` (OpenAI's shape). It raises ``ModelError`` when
    no usable reply came back, and nothing else on purpose.
    """

    name: str

    def complete(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec] = (),
        *,
        response_format: Mapping[str, Any] | None = None,
    ) -> ModelReply: ...
