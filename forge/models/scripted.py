"""``ScriptedModel``: replays prepared replies in order, for tests and demos.

Each call is kept (``calls``), so a test can assert what the model was shown and which
tools it was offered. A script file (JSON or YAML, for ``forge run --model
scripted:FILE``) is a list of replies, each either a string (a final answer) or an
object ``{content?, tool_calls?: [{name, arguments?, id?}], tokens?, cost?, model?,
input_tokens?, output_tokens?}`` (the last two: the parts of ``tokens`` traces report).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml

from forge.errors import ForgeError
from forge.models.port import Message, ModelError, ModelReply, ToolCall
from forge.tools.spec import ToolSpec

__all__ = ["ModelCall", "ScriptError", "ScriptedModel"]


class ScriptError(ForgeError, ValueError):
    """A model script that is not a list of replies of the documented shape."""

    code = "invalid_model_script"


@dataclass(frozen=True)
class ModelCall:
    """What one ``complete`` call was given."""

    messages: tuple[Message, ...]
    tools: tuple[str, ...]
    response_format: Mapping[str, Any] | None


class ScriptedModel:
    def __init__(self, replies: Iterable[ModelReply | str], name: str = "scripted") -> None:
        self._replies = [
            ModelReply(content=reply) if isinstance(reply, str) else reply for reply in replies
        ]
        self.name = name
        self.calls: list[ModelCall] = []

    def complete(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec] = (),
        *,
        response_format: Mapping[str, Any] | None = None,
    ) -> ModelReply:
        self.calls.append(
            ModelCall(tuple(messages), tuple(spec.name for spec in tools), response_format)
        )
        index = len(self.calls) - 1
        if index >= len(self._replies):
            raise ModelError(
                f"the scripted model has no reply left after {len(self._replies)}",
                code="model_exhausted",
            )
        reply = self._replies[index]
        return reply if reply.model else replace(reply, model=self.name)

    @classmethod
    def from_data(cls, data: object, name: str = "scripted") -> ScriptedModel:
        if not isinstance(data, list):
            raise ScriptError("a model script is a list of replies")
        return cls((_reply(item, index) for index, item in enumerate(data)), name)

    @classmethod
    def from_file(cls, path: Path) -> ScriptedModel:
        """Raises ``ScriptError`` for a file that cannot be read or has the wrong shape."""
        try:
            text = path.read_text(encoding="utf-8")
            data = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
        except (OSError, ValueError, yaml.YAMLError) as exc:
            raise ScriptError(f"cannot read model script {path}: {exc}") from None
        return cls.from_data(data, name=f"scripted:{path.name}")


def _reply(item: object, index: int) -> ModelReply | str:
    if isinstance(item, str):
        return item
    where = f"reply {index}"
    if not isinstance(item, dict):
        raise ScriptError(f"{where} must be a string or an object")
    fields = {"content", "tool_calls", "tokens", "cost", "model", "input_tokens", "output_tokens"}
    unknown = set(item) - fields
    if unknown:
        raise ScriptError(f"{where} has unknown field(s) {', '.join(sorted(map(str, unknown)))}")
    content = item.get("content", "")
    if not isinstance(content, str):
        content = json.dumps(content)  # a YAML object written as the answer itself
    calls = item.get("tool_calls") or []
    if not isinstance(calls, list):
        raise ScriptError(f"{where}: tool_calls must be a list")
    tokens, cost = item.get("tokens", 0), item.get("cost", 0.0)
    if not isinstance(tokens, int) or not isinstance(cost, int | float):
        raise ScriptError(f"{where}: tokens must be an integer and cost a number")
    parts = item.get("input_tokens", 0), item.get("output_tokens", 0)
    if not all(isinstance(part, int) for part in parts):
        raise ScriptError(f"{where}: input_tokens and output_tokens must be integers")
    return ModelReply(
        content,
        tuple(_call(call, f"{where}.tool_calls[{i}]", i) for i, call in enumerate(calls)),
        tokens,
        float(cost),
        str(item.get("model", "")),
        input_tokens=parts[0],
        output_tokens=parts[1],
    )


def _call(item: object, where: str, index: int) -> ToolCall:
    if not isinstance(item, dict) or not isinstance(item.get("name"), str):
        raise ScriptError(f"{where} must be an object with a name")
    arguments = item.get("arguments") or {}
    if not isinstance(arguments, dict):
        raise ScriptError(f"{where}: arguments must be an object")
    return ToolCall(str(item.get("id") or f"call_{index}"), item["name"], arguments)
