"""MCP servers as an operator configures them: the common ``mcpServers`` JSON file.

The file is the one Claude Desktop, Cursor and most MCP clients read::

    {"mcpServers": {
        "time": {"command": "uvx", "args": ["mcp-server-time"], "env": {"TZ": "UTC"}},
        "docs": {"url": "https://mcp.example.com/mcp",
                 "headers": {"Authorization": "Bearer ${DOCS_TOKEN}"}}}}

A server has either ``command`` (with ``args``, ``env`` and ``cwd``: started over stdio)
or ``url`` (with ``headers``: MCP's streamable HTTP transport); ``type`` may say which
(``stdio``, ``http``, ``streamable-http``) and ``disabled: true`` leaves a server out.
``${NAME}`` and ``${NAME:-default}`` in a command, argument, ``cwd``, URL, environment or
header value are read from the environment, so secrets need not be written in the file.
Anything else is refused with ``invalid_mcp_config`` naming the server and the field,
rather than ignored: a client's ``autoApprove`` list, say, would suggest approvals that
Forge never takes from this file. Other top-level keys are left alone, so a client's
whole settings file can be used as is. Importing this module does not import the SDK.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from forge.errors import ForgeError

__all__ = [
    "SERVER_NAME",
    "McpConfigError",
    "McpServerConfig",
    "load_mcp_servers",
    "parse_mcp_servers",
]

# A server's name prefixes its tools' ids (``<server>.<tool>``, at most 64 characters).
SERVER_NAME = re.compile(r"[A-Za-z0-9_-]{1,24}")
_FIELDS = {"type", "command", "args", "env", "cwd", "url", "headers", "disabled"}
_TYPES = {"stdio": "stdio", "http": "http", "streamable-http": "http", "streamableHttp": "http"}
_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
_MAX_BYTES = 1 << 20

Transport = Literal["stdio", "http"]


class McpConfigError(ForgeError, ValueError):
    code = "invalid_mcp_config"


@dataclass(frozen=True)
class McpServerConfig:
    """One server: started with ``command`` over stdio, or reached at ``url``.

    ``env`` and ``headers`` often hold credentials, so they stay out of ``repr`` and are
    never shown; ``secrets`` lists their values, which error messages mask.
    """

    name: str
    command: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = field(default=(), repr=False)
    cwd: str | None = None
    url: str = ""
    headers: tuple[tuple[str, str], ...] = field(default=(), repr=False)

    def __post_init__(self) -> None:
        if not SERVER_NAME.fullmatch(self.name):
            raise McpConfigError(
                f"MCP server name {self.name!r} must match {SERVER_NAME.pattern} "
                "(it prefixes the ids of its tools)"
            )
        if bool(self.command) == bool(self.url):
            raise McpConfigError(f"MCP server {self.name!r} needs a command or a url, not both")

    @property
    def transport(self) -> Transport:
        return "http" if self.url else "stdio"

    @property
    def secrets(self) -> tuple[str, ...]:
        """Values that must never appear in what people see (environment and headers)."""
        return tuple(value for _, value in (*self.env, *self.headers) if len(value) >= 4)

    @classmethod
    def parse(cls, text: str) -> McpServerConfig:
        """``NAME=COMMAND ARGS...``, as ``forge run --mcp`` takes it."""
        name, sep, command = text.partition("=")
        if not sep or not name.strip() or not command.strip():
            raise McpConfigError(f"an MCP server is given as NAME=COMMAND, not {text!r}")
        return cls(name.strip(), tuple(shlex.split(command)))


def load_mcp_servers(
    path: Path, environ: Mapping[str, str] | None = None
) -> tuple[McpServerConfig, ...]:
    """The servers of an ``mcpServers`` JSON file; ``McpConfigError`` naming the file for
    anything unreadable or malformed."""
    try:
        with path.open("rb") as stream:
            raw = stream.read(_MAX_BYTES + 1)
        if len(raw) > _MAX_BYTES:
            raise McpConfigError(f"{path} is over {_MAX_BYTES} bytes")
        data = json.loads(raw.decode("utf-8"))
    except OSError as exc:
        raise McpConfigError(f"cannot read MCP servers file {path}: {exc.strerror}") from None
    except (UnicodeDecodeError, ValueError) as exc:
        if isinstance(exc, McpConfigError):
            raise
        raise McpConfigError(f"MCP servers file {path} is not JSON: {exc}") from None
    try:
        return parse_mcp_servers(data, os.environ if environ is None else environ)
    except McpConfigError as exc:
        raise McpConfigError(f"MCP servers file {path}: {exc}") from None


def parse_mcp_servers(data: object, environ: Mapping[str, str]) -> tuple[McpServerConfig, ...]:
    """The servers of ``{"mcpServers": {...}}`` as plain data, in the file's order."""
    if not isinstance(data, Mapping) or not isinstance(data.get("mcpServers"), Mapping):
        raise McpConfigError('the file must be an object with an "mcpServers" object')
    servers = []
    for name, entry in data["mcpServers"].items():
        if not isinstance(entry, Mapping):
            raise McpConfigError(f"server {name!r} must be an object")
        disabled = entry.get("disabled", False)
        if not isinstance(disabled, bool):
            raise McpConfigError(f"server {name!r}: disabled must be true or false")
        if disabled:
            continue
        servers.append(_server(str(name), entry, environ))
    return tuple(servers)


def _server(name: str, entry: Mapping[str, object], environ: Mapping[str, str]) -> McpServerConfig:
    unknown = sorted(set(map(str, entry)) - _FIELDS)
    if unknown:
        hint = (
            " (Forge takes approvals from its policy, never from this file)"
            if {"autoApprove", "alwaysAllow"} & set(unknown)
            else ""
        )
        raise McpConfigError(f"server {name!r}: unknown field(s) {', '.join(unknown)}{hint}")
    kind = _string(name, entry, "type")
    if kind and kind not in _TYPES:
        sse = " (the SSE transport is not supported; use streamable HTTP)" if kind == "sse" else ""
        raise McpConfigError(f"server {name!r}: unknown type {kind!r}{sse}")

    def expand(value: str, where: str) -> str:
        return _expand(value, environ, f"server {name!r} {where}")

    command = _string(name, entry, "command")
    args = _strings(name, entry, "args")
    url = _string(name, entry, "url")
    if kind and (_TYPES[kind] == "http") != bool(url):
        raise McpConfigError(f"server {name!r}: type {kind!r} does not match its fields")
    if url and (command or args or "env" in entry or "cwd" in entry):
        raise McpConfigError(f"server {name!r}: a url server takes no command, args, env or cwd")
    if command and "headers" in entry:
        raise McpConfigError(f"server {name!r}: headers are for url servers")
    if not command and not url:
        raise McpConfigError(f"server {name!r} needs a command or a url")
    if url:
        url = expand(url, "url")
        if not url.startswith(("http://", "https://")):
            raise McpConfigError(f"server {name!r}: url must be http:// or https://")
    cwd = _string(name, entry, "cwd")
    return McpServerConfig(
        name=name,
        command=tuple(expand(part, "command") for part in ([command] if command else []) + args),
        env=tuple((key, expand(value, f"env {key}")) for key, value in _pairs(name, entry, "env")),
        cwd=expand(cwd, "cwd") if cwd else None,
        url=url,
        headers=tuple(
            (key, expand(value, f"header {key}")) for key, value in _pairs(name, entry, "headers")
        ),
    )


def _string(name: object, entry: Mapping[str, object], key: str) -> str:
    """The field's text, ``""`` when absent; present, it must be a non-empty string."""
    value = entry.get(key, "")
    if not isinstance(value, str) or (key in entry and not value):
        raise McpConfigError(f"server {name!r}: {key} must be a non-empty string")
    return value


def _strings(name: str, entry: Mapping[str, object], key: str) -> list[str]:
    value = entry.get(key, [])
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise McpConfigError(f"server {name!r}: {key} must be a list of strings")
    return value


def _pairs(name: str, entry: Mapping[str, object], key: str) -> list[tuple[str, str]]:
    value = entry.get(key, {})
    if not isinstance(value, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise McpConfigError(f"server {name!r}: {key} must map names to strings")
    return list(value.items())


def _expand(value: str, environ: Mapping[str, str], where: str) -> str:
    def replace(match: re.Match[str]) -> str:
        variable, default = match.group(1), match.group(2)
        found = environ.get(variable)
        if found is None or (found == "" and default is not None):
            if default is None:
                raise McpConfigError(f"{where}: environment variable {variable} is not set")
            return default
        return found

    return _REFERENCE.sub(replace, value)
