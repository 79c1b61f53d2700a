"""What a tool's declared output says is at a path: for the compiler's check of a
reference (``forge.plan.references``) into an earlier step's output.

The walk follows ``properties``, ``additionalProperties`` and ``items`` of the tool's
``output_schema``. It answers "missing" only where the schema says so (an object whose
``additionalProperties`` is false and that lists no such key, a list indexed by a name,
a string, number or boolean that has no keys), and "unknown" wherever it cannot tell
(no schema, ``{}``, ``anyOf``...), so a reference is never refused for what a schema
merely leaves open.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["OutputShape", "shape_at", "shape_in_value"]

_SCALARS = ("string", "integer", "number", "boolean", "null")


@dataclass(frozen=True)
class OutputShape:
    """``json_type`` is the JSON type found at the path (``None``: not known); ``problem``
    is non-empty when the declared output has nothing there."""

    json_type: str | None = None
    problem: str = ""


def shape_at(schema: Mapping[str, Any] | None, path: tuple[str, ...]) -> OutputShape:
    """What ``schema`` (a tool's ``output_schema``) declares at ``path``."""
    node: Any = schema
    for depth, segment in enumerate(path):
        if not isinstance(node, Mapping):
            return OutputShape()
        where = ".".join(path[:depth]) or "the output"
        kind = _type(node)
        if kind == "object" or (kind is None and "properties" in node):
            properties = node.get("properties")
            if isinstance(properties, Mapping) and segment in properties:
                node = properties[segment]
                continue
            extra = node.get("additionalProperties", True)
            if extra is False:
                keys = ", ".join(sorted(properties)) if isinstance(properties, Mapping) else ""
                return OutputShape(problem=f"{where} has no {segment!r} (it has: {keys or 'none'})")
            node = extra if isinstance(extra, Mapping) else None
        elif kind == "array":
            if not segment.isdigit():
                return OutputShape(
                    problem=f"{where} is a list: index it with a number, not {segment!r}"
                )
            items = node.get("items")
            node = items if isinstance(items, Mapping) else None
        elif kind in _SCALARS:
            return OutputShape(problem=f"{where} is {_article(kind)}, it has no {segment!r}")
        else:
            return OutputShape()
    if not isinstance(node, Mapping):
        return OutputShape()
    return OutputShape(_type(node))


def shape_in_value(
    value: Any, path: tuple[str, ...], opaque: type | tuple[type, ...] = ()
) -> OutputShape:
    """What a known value (an ``echo`` step's arguments as written) holds at ``path``;
    an instance of ``opaque`` (an operator whose value is known only at run time) is
    not looked into."""
    for depth, segment in enumerate(path):
        if opaque and isinstance(value, opaque):
            return OutputShape()
        where = ".".join(path[:depth]) or "the output"
        if isinstance(value, Mapping):
            if segment not in value:
                keys = ", ".join(sorted(value)) or "none"
                return OutputShape(problem=f"{where} has no {segment!r} (it has: {keys})")
            value = value[segment]
        elif isinstance(value, list):
            if not segment.isdigit() or int(segment) >= len(value):
                return OutputShape(
                    problem=f"{where} is a list of {len(value)} item(s), it has no {segment!r}"
                )
            value = value[int(segment)]
        else:
            return OutputShape(
                problem=f"{where} is {_article(_kind(value))}, it has no {segment!r}"
            )
    if opaque and isinstance(value, opaque):
        return OutputShape()
    return OutputShape(_kind(value))


def _type(node: Mapping[str, Any]) -> str | None:
    kind = node.get("type")
    return kind if isinstance(kind, str) else None


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, Mapping):
        return "object"
    return "null"


def _article(kind: str) -> str:
    return {"integer": "an integer", "array": "a list", "object": "an object"}.get(
        kind, f"a {kind}"
    )
