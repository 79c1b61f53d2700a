"""The built-in tool catalogue of SPEC section 3. Their runners live in ``forge.runners``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from forge.tools.hosts import HostAllowList
from forge.tools.registry import ToolRegistry
from forge.tools.spec import SideEffect, ToolSpec

__all__ = ["BUILTIN_TOOLS", "builtin_registry", "builtin_tools"]

_STRING_MAP = {"type": "object", "additionalProperties": {"type": "string"}}


def _output(**properties: Any) -> dict[str, Any]:
    """SPEC section 3's output of a built-in: exactly these keys."""
    return {"type": "object", "properties": properties, "additionalProperties": False}


_STRING: dict[str, Any] = {"type": "string"}
_BOOLEAN: dict[str, Any] = {"type": "boolean"}


def _http_side_effect(args: Mapping[str, Any]) -> SideEffect:
    return "read" if str(args.get("method", "GET")).upper() in ("GET", "HEAD") else "external"


BUILTIN_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="noop",
        description="Does nothing and returns {}.",
        args_schema={"type": "object", "additionalProperties": False},
        permission_scope="compute",
        output_schema=_output(),
    ),
    ToolSpec(
        name="echo",
        description="Returns its arguments unchanged.",
        args_schema={"type": "object"},
        permission_scope="compute",
        echoes_args=True,
    ),
    ToolSpec(
        name="sleep",
        description="Waits the given number of seconds and returns {slept}.",
        args_schema={
            "type": "object",
            "properties": {"seconds": {"type": "number", "minimum": 0, "maximum": 86400}},
            "required": ["seconds"],
            "additionalProperties": False,
        },
        permission_scope="compute",
        output_schema=_output(slept={"type": "number"}),
    ),
    ToolSpec(
        name="fail",
        description="Always fails with the given message.",
        args_schema={
            "type": "object",
            "properties": {"message": {"type": "string"}},
            "required": ["message"],
            "additionalProperties": False,
        },
        permission_scope="compute",
        output_schema=_output(),  # it never succeeds, so nothing can be taken from it
    ),
    ToolSpec(
        name="shell",
        description="Runs an argv list in the run's workspace, sandboxed; non-zero exit fails.",
        args_schema={
            "type": "object",
            "properties": {
                "argv": {"type": "array", "items": {"type": "string"}, "minItems": 1},
                "env": _STRING_MAP,
                "timeout_s": {"type": "number", "exclusiveMinimum": 0},
            },
            "required": ["argv"],
            "additionalProperties": False,
        },
        permission_scope="shell",
        side_effect="write",
        idempotent=False,
        risk="medium",
        output_schema=_output(exit_code={"type": "integer"}, stdout=_STRING, stderr=_STRING),
    ),
    ToolSpec(
        name="http_request",
        description="Sends an HTTP request to an allow-listed host.",
        args_schema={
            "type": "object",
            "properties": {
                "method": {"enum": ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"]},
                "url": {"type": "string", "pattern": "^https?://"},
                "headers": _STRING_MAP,
                "body": {},
            },
            "required": ["method", "url"],
            "additionalProperties": False,
        },
        permission_scope="http",
        side_effect="external",
        idempotent=False,
        risk="medium",
        side_effect_of=_http_side_effect,
        output_schema=_output(status={"type": "integer"}, headers=_STRING_MAP, body={}),
    ),
    ToolSpec(
        name="file_read",
        description="Reads a file of the run's workspace.",
        args_schema={
            "type": "object",
            "properties": {"path": {"type": "string", "minLength": 1}},
            "required": ["path"],
            "additionalProperties": False,
        },
        permission_scope="file_read",
        side_effect="read",
        output_schema=_output(path=_STRING, content=_STRING),
    ),
    ToolSpec(
        name="file_search",
        description=(
            "Searches the text files of the run's workspace for a regular expression; "
            "returns {matches: [{path, line, text}], truncated}."
        ),
        args_schema={
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "minLength": 1, "maxLength": 1000},
                "path": {"type": "string", "minLength": 1},
                "max_results": {"type": "integer", "minimum": 1, "maximum": 1000},
            },
            "required": ["pattern"],
            "additionalProperties": False,
        },
        permission_scope="file_read",
        side_effect="read",
        default_timeout_s=30.0,
        output_schema=_output(
            matches={
                "type": "array",
                "items": _output(path=_STRING, line={"type": "integer"}, text=_STRING),
            },
            truncated=_BOOLEAN,
        ),
    ),
    ToolSpec(
        name="sql_read",
        description=(
            "Runs one read-only SELECT (or WITH ... SELECT) on a SQLite file of the run's "
            "workspace; returns {columns, rows, truncated}."
        ),
        args_schema={
            "type": "object",
            "properties": {
                "query": {"type": "string", "minLength": 1, "maxLength": 100000},
                "database": {"type": "string", "minLength": 1},
                "max_rows": {"type": "integer", "minimum": 1, "maximum": 10000},
            },
            "required": ["query"],
            "additionalProperties": False,
        },
        permission_scope="database_read",
        side_effect="read",
        default_timeout_s=30.0,
        output_schema=_output(
            columns={"type": "array", "items": _STRING},
            rows={"type": "array", "items": {"type": "array"}},
            truncated=_BOOLEAN,
        ),
    ),
    ToolSpec(
        name="file_write",
        description="Writes a file of the run's workspace in two phases: diff, then commit.",
        args_schema={
            "type": "object",
            "properties": {
                "path": {"type": "string", "minLength": 1},
                "content": {"type": "string"},
            },
            "required": ["path", "content"],
            "additionalProperties": False,
        },
        permission_scope="file_write",
        side_effect="write",
        idempotent=True,  # writing the same content twice leaves the same file
        risk="medium",
        output_schema=_output(path=_STRING, diff=_STRING, committed=_BOOLEAN),
    ),
)


def builtin_tools(allowed_hosts: HostAllowList | None = None) -> tuple[ToolSpec, ...]:
    """``BUILTIN_TOOLS``; with ``allowed_hosts``, ``http_request`` knows which calls its
    runner will refuse (``ToolSpec.refusal_of``), so the compiler reports them."""
    if allowed_hosts is None:
        return BUILTIN_TOOLS
    return tuple(
        replace(spec, refusal_of=allowed_hosts.call_refusal)
        if spec.name == "http_request"
        else spec
        for spec in BUILTIN_TOOLS
    )


def builtin_registry(allowed_hosts: HostAllowList | None = None) -> ToolRegistry:
    return ToolRegistry(builtin_tools(allowed_hosts))
