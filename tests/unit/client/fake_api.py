"""A hand-written fake of Forge's REST API for ``httpx.MockTransport``: each route answers
from a script of answers (the last one repeats), and every request is recorded.

``FakeTime`` is the clients' clock and sleep: sleeping only moves its clock.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx

BASE = "http://forge.test"
TOKEN = "forge_0123456789ab_" + "s" * 43


@dataclass
class Seen:
    method: str
    path: str
    query: dict[str, str]
    body: Any
    headers: httpx.Headers


@dataclass
class FakeApi:
    routes: dict[str, list[Callable[[], httpx.Response]]] = field(default_factory=dict)
    seen: list[Seen] = field(default_factory=list)

    def on(self, method: str, path: str, *answers: tuple[int, Any] | Exception) -> FakeApi:
        """Answer ``method path`` (under /api/v1) with ``answers`` in turn, the last one
        for ever after; an answer is ``(status, JSON body or text)`` or an exception."""
        self.routes[f"{method} /api/v1{path}"] = [_answer(a) for a in answers]
        return self

    def handler(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content) if request.content else None
        self.seen.append(
            Seen(request.method, request.url.path, dict(request.url.params), body, request.headers)
        )
        script = self.routes.get(f"{request.method} {request.url.path}")
        if script is None:
            return httpx.Response(404, json={"detail": "Not found", "code": "not_found"})
        return (script.pop(0) if len(script) > 1 else script[0])()

    def transport(self) -> httpx.MockTransport:
        return httpx.MockTransport(self.handler)

    def paths(self) -> list[str]:
        return [f"{s.method} {s.path}" for s in self.seen]


def _answer(answer: tuple[int, Any] | Exception) -> Callable[[], httpx.Response]:
    def respond() -> httpx.Response:
        if isinstance(answer, Exception):
            raise answer
        status, body = answer
        if isinstance(body, str):
            return httpx.Response(status, text=body, headers={"content-type": "text/html"})
        return httpx.Response(status, json=body)

    return respond


@dataclass
class FakeTime:
    now: float = 0.0
    sleeps: list[float] = field(default_factory=list)

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds

    async def async_sleep(self, seconds: float) -> None:
        self.sleep(seconds)


# --- The API's answers, as the server writes them ----------------------------------------------

DIAGNOSTIC = {
    "code": "unknown_tool",
    "severity": "error",
    "message": "step 'send' uses tool 'mailer', which is not registered",
    "nodes": ["send"],
    "edges": [],
}
APPROVAL_REQUIRED = {
    "code": "approval_required",
    "severity": "info",
    "message": "step 'publish' waits for approval before file_write",
    "nodes": ["publish"],
    "edges": [["read", "publish"]],
}


def version_json(status: str = "awaiting_approval", **fields: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "plan": 7,
        "number": 1,
        "status": status,
        "has_errors": status == "has_errors",
        "content_hash": "c" * 64,
        "parent": None,
        "replan_reason": "",
        "note": "",
        "author": "agent",
        "planner": "editor",
        "source_format": "json",
        "created_at": "2026-03-01T09:00:00Z",
        "document": {"goal": "Summarise the notes", "steps": []},
        "diagnostics": [DIAGNOSTIC] if status == "has_errors" else [APPROVAL_REQUIRED],
        "approvals": [],
        "performed_side_effects": [],
    }
    if status in ("approved", "rejected"):
        data["approvals"] = [
            {
                "id": 1,
                "reviewer": "grace",
                "by_policy": False,
                "decision": status,
                "comment": "looks right" if status == "approved" else "no mail to outsiders",
                "content_hash": "c" * 64,
                "created_at": "2026-03-01T09:05:00Z",
            }
        ]
    return {**data, **fields}


def plan_json(status: str = "awaiting_approval") -> dict[str, Any]:
    return {
        "id": 7,
        "name": "Release notes",
        "created_by": "agent",
        "created_at": "2026-03-01T09:00:00Z",
        "status": status,
        "latest_version": version_json(status),
    }


def run_json(status: str = "queued", **fields: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "id": 3,
        "plan_id": 7,
        "plan_name": "Release notes",
        "version": 1,
        "status": status,
        "started_by": "agent",
        "created_at": "2026-03-01T09:06:00Z",
        "finished_at": None,
        "replans": 0,
        "last_seq": 2,
        "budget": {},
        "max_replans": 3,
        "failed_step": "",
        "reset": [],
        "preserved": [],
        "blocked_reason": "",
        "steps": [
            {"step_id": "read", "plan_version": 1, "status": "ready", "attempt": 0,
             "tool": "file_read", "args_hash": "a" * 64, "depends_on": [], "output": None,
             "error": "", "verdict": None, "tokens": 0, "cost": 0.0, "approved_by": "",
             "started_at": None, "finished_at": None, "latency_ms": None, "artifacts": [],
             "preview": None},
        ],
    }  # fmt: skip
    return {**data, **fields}


def event_json(seq: int, event_type: str, step_id: str | None = None) -> dict[str, Any]:
    return {
        "run_id": "3",
        "plan_id": "7",
        "plan_version": 1,
        "step_id": step_id,
        "seq": seq,
        "event_type": event_type,
        "transition": None,
        "step_status": None,
        "blocked_reason": "",
        "facts": None,
        "artifacts": [],
        "tool_name": "",
        "tool_args_hash": "",
        "permission_scope": "",
        "side_effect": "",
        "latency_ms": None,
        "tokens": 0,
        "cost": 0.0,
        "model": "",
        "verdict": None,
        "actor": "agent",
        "created_at": "2026-03-01T09:06:00+00:00",
    }
