"""What /mcp says of itself and how it refuses arguments (issue 29, item 4): Forge's
version in serverInfo, the tools capability alone (no empty prompts or resources), and an
argument outside a tool's input schema answered as a tool error in Forge's one shape,
{"error": {"status", "code", "detail", "errors"}, "next"}, not the SDK's pydantic text."""

from __future__ import annotations

import pytest

from forge.version import forge_version

from .mcp_helpers import answer, call, initialized

pytestmark = pytest.mark.django_db(transaction=True)


def test_mcp_says_forges_version_and_offers_tools_only(viewer, token_for):
    said = initialized(token_for(viewer))

    assert (said.server_info.name, said.server_info.version) == ("forge", forge_version())
    assert said.capabilities.tools is not None
    assert (said.capabilities.prompts, said.capabilities.resources) == (None, None)


def test_an_argument_outside_the_schema_is_a_validation_error_in_forges_shape(author, token_for):
    result = call(token_for(author), "plan_status", {"plan_id": 0, "version": "two"})

    assert result.is_error
    assert answer(result) == {
        "error": {
            "status": 422,
            "code": "validation_error",
            "detail": "the arguments of plan_status do not match its input schema",
            "errors": [
                {"loc": ["arguments", "plan_id"], "msg": "0 is less than the minimum of 1"},
                {
                    "loc": ["arguments", "version"],
                    "msg": "'two' is not valid under any of the given schemas",
                },
            ],
        },
        "next": "The arguments were refused: see errors for which and why.",
    }


def test_a_missing_argument_is_named(author, token_for):
    result = call(token_for(author), "get_run", {})

    assert answer(result)["error"]["errors"] == [
        {"loc": ["arguments"], "msg": "'run_id' is a required property"}
    ]
