"""The tool registry: name to ``ToolSpec``, with compiled argument validators.

Each schema is validated under its own ``$schema``: drafts 4, 6 and 7 (and a schema that
names none) by fastjsonschema, which compiles them to Python and is fast; any other
dialect jsonschema knows (2019-09, 2020-12) by jsonschema, since fastjsonschema would
silently ignore their keywords (``prefixItems``, ``dependentRequired``). A dialect
neither knows, or a schema invalid under its dialect, is refused when the tool is
registered (``SchemaUnsupported``): a schema Forge cannot enforce never guards a call.

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

__all__ = [
    "ArgumentsInvalid",
    "SchemaUnsupported",
    "ToolRegistry",
    "UnknownTool",
    "validate_with_schema",
]

# The dialects fastjsonschema implements, as ``$schema`` spells them.
_FAST_DIALECTS = frozenset(
    f"{scheme}://json-schema.org/draft-{draft}/schema{end}"
    for scheme in ("http", "https")
    for draft in ("04", "06", "07")
    for end in ("", "#")
)

Validator = Callable[[Any], None]  # raises ArgumentsInvalid naming what is wrong


class UnknownTool(ForgeError, KeyError):
    code = "unknown_tool"

    def __str__(self) -> str:  # KeyError would quote the message
        return self.message


class ArgumentsInvalid(ForgeError, ValueError):
    code = "invalid_args"


class SchemaUnsupported(ForgeError, ValueError):
    """A tool's argument schema Forge cannot enforce: ``unsupported_schema`` (a dialect
    no validator here knows) or ``invalid_schema`` (not valid under its dialect)."""

    code = "unsupported_schema"


class ToolRegistry:
    def __init__(
        self, specs: Iterable[ToolSpec] = (), *, unavailable: Mapping[str, str] | None = None
    ) -> None:
        self._specs: dict[str, ToolSpec] = {}
        self._validators: dict[str, Validator] = {}
        self.unavailable: Mapping[str, str] = dict(unavailable or {})
        for spec in specs:
            self.register(spec)

    def register(self, spec: ToolSpec) -> None:
        if spec.name in self._specs:
            raise ValueError(f"tool {spec.name!r} is already registered")
        # Compile now, so a broken schema fails at registration rather than mid-compile;
        # once per distinct schema in a process (each discovery builds a new registry).
        self._validators[spec.name] = _validator(spec)
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
        _validate(validator, name, args)


def validate_with_schema(spec: ToolSpec, args: Mapping[str, Any]) -> None:
    """``ToolRegistry.validate_args`` for a spec at hand without its registry (a call
    resolved at run time, ``forge.runtime.calls``): the same validator and message,
    compiled once per distinct schema. Raises ``ArgumentsInvalid``."""
    _validate(_validator(spec), spec.name, args)


def _validate(validator: Validator, name: str, args: Mapping[str, Any]) -> None:
    try:
        # fastjsonschema's "object" test is isinstance(dict): a read-only view fails it
        validator(args if isinstance(args, dict) else dict(args))
    except _Invalid as exc:
        raise ArgumentsInvalid(f"arguments of {name!r}: {exc.message}") from None


class _Invalid(Exception):
    def __init__(self, message: str) -> None:
        self.message = message


def _validator(spec: ToolSpec) -> Validator:
    try:
        return _compiled(json.dumps(spec.args_schema, sort_keys=True, default=dict))
    except SchemaUnsupported as exc:
        raise SchemaUnsupported(f"tool {spec.name!r}: {exc.message}", code=exc.code) from None


@lru_cache(maxsize=256)
def _compiled(schema_json: str) -> Validator:
    schema = json.loads(schema_json)
    dialect = schema.get("$schema") if isinstance(schema, dict) else None
    if dialect is None or dialect in _FAST_DIALECTS:
        return _fast(schema)
    # jsonschema takes a tenth of a second to import: only schemas of its dialects pay
    # (forge compile of built-in tools never does; tests/unit/cli/test_startup_imports.py).
    import jsonschema
    from jsonschema.exceptions import SchemaError

    cls = jsonschema.validators.validator_for(schema, default=None)
    if cls is None:
        raise SchemaUnsupported(
            f"its argument schema declares $schema {dialect!r}, a dialect Forge cannot "
            "validate (it knows JSON Schema drafts 4, 6, 7, 2019-09 and 2020-12)"
        )
    try:
        cls.check_schema(schema)
    except SchemaError as exc:
        raise SchemaUnsupported(
            f"its argument schema is not valid {dialect}: {exc.message}", code="invalid_schema"
        ) from None
    return _checked_by(cls(schema))


def _fast(schema: Any) -> Validator:
    compiled = fastjsonschema.compile(schema)

    def validate(args: Any) -> None:
        try:
            compiled(args)
        except fastjsonschema.JsonSchemaValueException as exc:
            raise _Invalid(exc.message) from None

    return validate


def _checked_by(validator: Any) -> Validator:
    from jsonschema.exceptions import best_match  # imported with jsonschema above

    def validate(args: Any) -> None:
        error = best_match(validator.iter_errors(args))
        if error is not None:
            where = "".join(f"[{part!r}]" for part in error.absolute_path)
            raise _Invalid(f"data{where} {error.message}" if where else error.message)

    return validate
