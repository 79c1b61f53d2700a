"""A real HTTP server standing in for an OpenAI-compatible endpoint.

Queue what it answers with ``reply(...)`` (a chat completion) or ``respond(...)`` (any
status and body); every request is kept, parsed, in ``requests``, with its headers in
``headers``. With nothing queued it answers 500, so a test that calls once too often
fails loudly. Like OpenAI's endpoint, it refuses with 400 a request that names a
function outside ``^[a-zA-Z0-9_-]+$`` or over 64 characters, in its tools or in earlier
tool calls, and then answers nothing queued.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def completion(
    content: str | None = "",
    tool_calls: Sequence[tuple[str, Any]] = (),
    *,
    tokens: int = 0,
    model: str = "fake-model",
) -> dict[str, Any]:
    """A chat completion body; each tool call is (name, arguments), arguments given as a
    dict (sent as JSON text, as OpenAI does) or as raw text."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = [
            {
                "id": f"call_{index}",
                "type": "function",
                "function": {
                    "name": name,
                    "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments),
                },
            }
            for index, (name, arguments) in enumerate(tool_calls)
        ]
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": tokens // 2, "completion_tokens": tokens - tokens // 2,
                  "total_tokens": tokens},
    }  # fmt: skip


class FakeOpenAI(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.answers: list[tuple[int, bytes, float]] = []
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.paths: list[str] = []
        self.lock = threading.Lock()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"

    def reply(self, content: str | None = "", tool_calls: Sequence[tuple[str, Any]] = (),
              *, tokens: int = 0, model: str = "fake-model") -> None:  # fmt: skip
        self.respond(200, completion(content, tool_calls, tokens=tokens, model=model))

    def respond(self, status: int, body: Any, *, delay_s: float = 0.0) -> None:
        raw = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.answers.append((status, raw, delay_s))

    def messages(self, index: int = -1) -> list[dict[str, Any]]:
        messages: list[dict[str, Any]] = self.requests[index]["messages"]
        return messages


class _Handler(BaseHTTPRequestHandler):
    server: FakeOpenAI

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("content-length") or 0))
        with self.server.lock:
            self.server.paths.append(self.path)
            self.server.headers.append(dict(self.headers))
            request = json.loads(body)
            self.server.requests.append(request)
            refusal = _bad_function_name(request)
            answer = self.server.answers.pop(0) if self.server.answers and not refusal else None
        status, raw, delay_s = (
            refusal or answer or (500, b'{"error": {"message": "nothing queued"}}', 0)
        )
        time.sleep(delay_s)
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)
        except OSError:
            pass  # the client gave up (a timeout test)


_FUNCTION_NAME = re.compile(r"[a-zA-Z0-9_-]+")


def _bad_function_name(request: Any) -> tuple[int, bytes, float] | None:
    """OpenAI's 400 for the first function name it would refuse, else None."""
    named = [
        (f"tools[{index}].function.name", tool.get("function", {}).get("name"))
        for index, tool in enumerate(request.get("tools") or [])
    ] + [
        (f"messages[{index}].tool_calls[{number}].function.name", call["function"]["name"])
        for index, message in enumerate(request.get("messages") or [])
        for number, call in enumerate(message.get("tool_calls") or [])
    ]
    for where, name in named:
        if not isinstance(name, str) or not _FUNCTION_NAME.fullmatch(name):
            why = (
                "string does not match pattern. "
                "Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'."
            )
        elif len(name) > 64:
            why = "string too long. Expected a string with maximum length 64."
        else:
            continue
        error = {"message": f"Invalid '{where}': {why}", "type": "invalid_request_error",
                 "param": where, "code": "invalid_value"}  # fmt: skip
        return 400, json.dumps({"error": error}).encode(), 0.0
    return None


@contextmanager
def running() -> Iterator[FakeOpenAI]:
    server = FakeOpenAI()
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
