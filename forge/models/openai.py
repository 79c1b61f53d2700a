"""``OpenAICompatibleModel``: any endpoint that speaks OpenAI's chat completions.

One ``POST {base_url}/chat/completions`` per call, over httpx. Tools are offered in the
function format with their ``args_schema`` as parameters, each under a name such
endpoints accept (``forge.models.function_names``: ``ledger.list_entries`` goes as
``ledger_list_entries``, and calls come back under the catalogue's name); the reply's
``choices[0].message`` gives the text and the tool calls, ``usage.total_tokens`` the
tokens, and the optional price per thousand tokens the cost. Everything that is not a
usable reply is a ``ModelError`` with a code: an HTTP status of 400 or more, a timeout
(httpx's per-read timeout plus a deadline over the whole call, so a server dripping
bytes cannot hold a step forever), an unreachable host, or a body that is not the
expected JSON. The body is read with a size cap. The API key goes only into the
``Authorization`` header, never into an error message.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from typing import Any

import httpx

from forge.models.function_names import FunctionNames
from forge.models.port import Message, ModelError, ModelReply, ToolCall
from forge.tools.spec import ToolSpec

__all__ = ["OpenAICompatibleModel", "tool_schema", "wire_message"]

DEFAULT_MAX_RESPONSE_BYTES = 8 << 20


def tool_schema(spec: ToolSpec, names: FunctionNames) -> dict[str, Any]:
    """``spec`` as an OpenAI function tool, under its wire name (``names`` made with it)."""
    return {
        "type": "function",
        "function": {
            "name": names.wire(spec.name),
            "description": spec.description,
            "parameters": dict(spec.args_schema),
        },
    }


def wire_message(message: Message, names: FunctionNames) -> dict[str, Any]:
    """``message`` in the chat completions shape, its tool calls under their wire names
    (``names`` made with them)."""
    data: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.tool_calls:
        data["content"] = message.content or None
        data["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {
                    "name": names.wire(call.name),
                    "arguments": json.dumps(dict(call.arguments)),
                },
            }
            for call in message.tool_calls
        ]
    if message.role == "tool":
        data["tool_call_id"] = message.tool_call_id
    return data


class OpenAICompatibleModel:
    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        *,
        timeout_s: float = 60.0,
        price_per_1k_tokens: float | None = None,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
    ) -> None:
        if timeout_s <= 0:
            raise ValueError(f"timeout_s must be positive, got {timeout_s}")
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model = model
        self.name = f"openai:{model}"
        self.timeout_s = timeout_s
        self.price_per_1k_tokens = price_per_1k_tokens
        self.max_response_bytes = max_response_bytes
        headers = {"Accept": "application/json"}
        if api_key:
            headers["Authorization"] = f"Bearer {api_key}"
        self._client = httpx.Client(headers=headers, timeout=timeout_s)

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> OpenAICompatibleModel:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def complete(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec] = (),
        *,
        response_format: Mapping[str, Any] | None = None,
    ) -> ModelReply:
        names = FunctionNames.for_tools(
            [spec.name for spec in tools]
            + [call.name for message in messages for call in message.tool_calls]
        )
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [wire_message(message, names) for message in messages],
        }
        if tools:
            body["tools"] = [tool_schema(spec, names) for spec in tools]
        if response_format is not None:
            body["response_format"] = dict(response_format)
        status, raw = self._post(body)
        if status >= 400:
            raise ModelError(
                f"model endpoint {self.url} answered {status}: {_error_text(raw)}",
                code="model_http_error",
                status=status,
            )
        return self._reply(raw, names)

    def _post(self, body: dict[str, Any]) -> tuple[int, bytes]:
        deadline = time.monotonic() + self.timeout_s
        try:
            with self._client.stream("POST", self.url, json=body) as response:
                chunks: list[bytes] = []
                size = 0
                for chunk in response.iter_bytes():
                    size += len(chunk)
                    if size > self.max_response_bytes:
                        raise ModelError(
                            f"model endpoint {self.url} sent more than "
                            f"{self.max_response_bytes} bytes",
                            code="model_invalid_response",
                        )
                    if time.monotonic() > deadline:
                        raise httpx.ReadTimeout("the whole response took too long")
                    chunks.append(chunk)
                return response.status_code, b"".join(chunks)
        except httpx.TimeoutException:
            raise ModelError(
                f"model endpoint {self.url} did not answer within {self.timeout_s:g} s",
                code="model_timeout",
            ) from None
        except httpx.HTTPError as exc:
            raise ModelError(
                f"model endpoint {self.url} is unreachable: {type(exc).__name__}: {exc}",
                code="model_unreachable",
            ) from None

    def _reply(self, raw: bytes, names: FunctionNames) -> ModelReply:
        try:
            data = json.loads(raw)
            message = data["choices"][0]["message"]
            if not isinstance(message, dict):
                raise TypeError("message is not an object")
            raw_calls = message.get("tool_calls") or []
            calls = tuple(_tool_call(call, index, names) for index, call in enumerate(raw_calls))
            usage = data.get("usage") or {}
            tokens = _tokens(usage)
            input_tokens = int(usage.get("prompt_tokens") or 0)
            output_tokens = int(usage.get("completion_tokens") or 0)
        except (ValueError, LookupError, TypeError, AttributeError) as exc:
            raise ModelError(
                f"model endpoint {self.url} sent no chat completion: "
                f"{type(exc).__name__}: {exc}; body starts {raw[:200]!r}",
                code="model_invalid_response",
            ) from None
        price = self.price_per_1k_tokens
        return ModelReply(
            content=_text(message.get("content")),
            tool_calls=calls,
            tokens=tokens,
            cost=tokens / 1000 * price if price else 0.0,
            model=str(data.get("model") or self.model),
            input_tokens=input_tokens,
            output_tokens=output_tokens,
        )


def _tool_call(call: Any, index: int, names: FunctionNames) -> ToolCall:
    function = call["function"]
    wire_name = function["name"]
    if not isinstance(wire_name, str):
        raise TypeError(f"tool call {index} has no name")
    name = names.catalogue(wire_name)
    call_id = str(call.get("id") or f"call_{index}")
    raw = function.get("arguments")
    if raw is None or raw == "":
        return ToolCall(call_id, name, {})
    if isinstance(raw, dict):  # some servers send an object rather than JSON text
        return ToolCall(call_id, name, raw)
    try:
        arguments = json.loads(raw)
    except (TypeError, ValueError) as exc:
        return ToolCall(call_id, name, {}, error=f"the arguments are not JSON: {exc}")
    if not isinstance(arguments, dict):
        return ToolCall(call_id, name, {}, error="the arguments are not a JSON object")
    return ToolCall(call_id, name, arguments)


def _tokens(usage: Mapping[str, Any]) -> int:
    """``total_tokens``, or the sum of its parts for servers that leave it out."""
    total = int(usage.get("total_tokens") or 0)
    return total or int(usage.get("prompt_tokens") or 0) + int(usage.get("completion_tokens") or 0)


def _text(content: Any) -> str:
    """The message content: a string, null, or a list of parts (only text parts count)."""
    if content is None:
        return ""
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return str(content)


def _error_text(raw: bytes) -> str:
    """The endpoint's own error message when it sends one, else the head of the body."""
    try:
        error = json.loads(raw)["error"]
        message = error["message"] if isinstance(error, dict) else error
        return str(message)[:500]
    except (ValueError, LookupError, TypeError):
        return raw[:300].decode("utf-8", errors="replace") or "(empty body)"
