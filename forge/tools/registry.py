"""The tool registry: name to ``ToolSpec``, with compiled argument validators.

A registry also knows which sources of tools are down (``unavailable``: an MCP server's
name, the prefix of its tools' ids, to why it is not available), so that a plan naming
one of their tools hears that the server is down, not that the tool does not exist.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from functools import lru_cache
from typing import Any

import fastjsonschema

from forge.errors import ForgeError
from forge.tools.spec import ToolSpec

__all__ = ["ArgumentsInvalid", "ToolRegistry", "UnknownTool", "validate_with_schema"]


class UnknownTool(ForgeError, KeyError):
    code = "unknown_tool"

    def __str__(self) -> str:  # KeyError would quote the message
        return self.message


class ArgumentsInvalid(ForgeError, ValueError):
    code = "invalid_args"


class ToolRegistry:
    def __init__(
        self, specs: Iterable[ToolSpec] = (), *, unavailable: Mapping[str, str] | None = None
    ) -> None:
        self._specs: dict[str, ToolSpec] = {}
        self._validators: dict[str, Callable[[Any], Any]] = {}
        self.unavailable: Mapping[str, str] = dict(unavailable or {})
        for spec in specs:
            self.register(spec)

    def register(self, spec: ToolSpec) -> None:
        if spec.name in self._specs:
            raise ValueError(f"tool {spec.name!r} is already registered")
        # Compile now, so a broken schema fails at registration rather than mid-compile;
        # once per distinct schema in a process (each discovery builds a new registry).
        self._validators[spec.name] = _compiled(_schema_key(spec))
        self._specs[spec.name] = spec

    def get(self, name: str) -> ToolSpec:
        try:
            return self._specs[name]
        except KeyError:
            raise UnknownTool(f"unknown tool {name!r}") from None

    def unavailable_reason(self, name: str) -> str | None:
        """Why ``name``, which is not registered, may exist but cannot be used now: its
        prefix (``<source>.``) names an unavailable source. ``None`` otherwise."""
        if name in self._specs:
            return None
        source, dot, _ = name.partition(".")
        return self.unavailable.get(source) if dot else None

    def __contains__(self, name: object) -> bool:
        return name in self._specs

    def __iter__(self) -> Iterator[ToolSpec]:
        return iter(sorted(self._specs.values(), key=lambda spec: spec.name))

    def __len__(self) -> int:
        return len(self._specs)

    def validate_args(self, name: str, args: Mapping[str, Any]) -> None:
        """Raise ``ArgumentsInvalid`` when ``args`` break the tool's JSON Schema."""
        validator = self._validators.get(name)
        if validator is None:
            raise UnknownTool(f"unknown tool {name!r}")
        try:
            # fastjsonschema's "object" test is isinstance(dict): a read-only view fails it
            validator(args if isinstance(args, dict) else dict(args))
        except fastjsonschema.JsonSchemaValueException as exc:
            raise ArgumentsInvalid(f"arguments of {name!r}: {exc.message}") from None


def _schema_key(spec: ToolSpec) -> str:
    return json.dumps(spec.args_schema, sort_keys=True, default=dict)


@lru_cache(maxsize=256)
def _compiled(schema_json: str) -> Callable[[Any], Any]:
    return fastjsonschema.compile(json.loads(schema_json))


def validate_with_schema(spec: ToolSpec, args: Mapping[str, Any]) -> None:
    """``ToolRegistry.validate_args`` for a spec at hand without its registry (a call
    resolved at run time, ``forge.runtime.calls``): the same validator and message,
    compiled once per distinct schema. Raises ``ArgumentsInvalid``."""
    validator = _compiled(_schema_key(spec))
    try:
        validator(args if isinstance(args, dict) else dict(args))
    except fastjsonschema.JsonSchemaValueException as exc:
        raise ArgumentsInvalid(f"arguments of {spec.name!r}: {exc.message}") from None
