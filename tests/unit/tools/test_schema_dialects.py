"""Each tool's argument schema is validated under its own ``$schema``: drafts 4, 6 and 7
by fastjsonschema (fast), 2019-09 and 2020-12 by jsonschema, which knows their keywords
(``prefixItems``, ``dependentRequired``); an MCP tool's schema without ``$schema`` is
2020-12, MCP's default dialect. A dialect Forge cannot validate is refused when the tool
is registered, naming the tool and the ``$schema``: never silently not enforced."""

from __future__ import annotations

import mcp.types as mcp_types
import pytest

from forge.runners.mcp import mcp_tool_spec
from forge.tools import ArgumentsInvalid, ToolRegistry, ToolSpec
from forge.tools.registry import SchemaUnsupported, validate_with_schema

DRAFT_2020 = "https://json-schema.org/draft/2020-12/schema"
DRAFT_2019 = "https://json-schema.org/draft/2019-09/schema"
DRAFT_07 = "http://json-schema.org/draft-07/schema#"

PAIR = {"type": "object", "properties": {"pair": {"type": "array", "prefixItems": [
    {"type": "string"}, {"type": "integer"}]}}}  # fmt: skip
CARD = {
    "type": "object",
    "properties": {"card": {"type": "string"}, "billing": {"type": "string"}},
    "dependentRequired": {"card": ["billing"]},
}


def _registry(name: str, schema: dict) -> ToolRegistry:
    return ToolRegistry([ToolSpec(name, name, schema, "compute")])


@pytest.mark.parametrize("dialect", [DRAFT_2020, DRAFT_2020 + "#"])
def test_prefix_items_of_a_2020_12_schema_are_enforced(dialect):
    registry = _registry("pairs", {"$schema": dialect, **PAIR})
    registry.validate_args("pairs", {"pair": ["a", 1]})

    with pytest.raises(ArgumentsInvalid, match="pair") as caught:
        registry.validate_args("pairs", {"pair": [1, "a"]})
    assert caught.value.code == "invalid_args"
    assert "arguments of 'pairs'" in caught.value.message


@pytest.mark.parametrize("dialect", [DRAFT_2020, DRAFT_2019])
def test_dependent_required_is_enforced(dialect):
    registry = _registry("pay", {"$schema": dialect, **CARD})
    registry.validate_args("pay", {"card": "4111", "billing": "here"})

    with pytest.raises(ArgumentsInvalid, match="billing"):
        registry.validate_args("pay", {"card": "4111"})


def test_a_draft_7_schema_is_still_validated():
    registry = _registry("old", {"$schema": DRAFT_07, "type": "object", "required": ["a"]})

    with pytest.raises(ArgumentsInvalid, match="a"):
        registry.validate_args("old", {})


def test_validate_with_schema_agrees_with_the_registry():
    spec = ToolSpec("pay", "pay", {"$schema": DRAFT_2020, **CARD}, "compute")

    with pytest.raises(ArgumentsInvalid, match="billing"):
        validate_with_schema(spec, {"card": "4111"})


def test_an_mcp_tool_without_a_schema_dialect_is_read_as_2020_12():
    tool = mcp_types.Tool(name="pay", input_schema=CARD)
    spec = mcp_tool_spec("shop", tool)
    registry = ToolRegistry([spec])

    with pytest.raises(ArgumentsInvalid, match="billing"):
        registry.validate_args(spec.name, {"card": "4111"})


def test_a_dialect_forge_cannot_validate_is_refused_at_registration():
    schema = {"$schema": "https://example.com/my-dialect", "type": "object"}

    with pytest.raises(SchemaUnsupported) as caught:
        _registry("odd", schema)

    assert caught.value.code == "unsupported_schema"
    assert "'odd'" in caught.value.message
    assert "https://example.com/my-dialect" in caught.value.message


def test_a_2020_12_schema_that_is_not_valid_is_refused_at_registration():
    with pytest.raises(SchemaUnsupported) as caught:
        _registry("bad", {"$schema": DRAFT_2020, "type": 5})

    assert caught.value.code == "invalid_schema"
    assert "'bad'" in caught.value.message
