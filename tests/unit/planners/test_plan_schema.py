"""PLAN_SCHEMA describes forge.plan/v1 as from_data reads it."""

from __future__ import annotations

from pathlib import Path

import jsonschema
import pytest

from forge.plan import PLAN_SCHEMA, detect_format, from_data
from forge.plan.formats.json_io import parse_json
from forge.plan.formats.yaml_safe import parse_yaml
from forge.plan.limits import DEFAULT_LIMITS

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
VALIDATOR = jsonschema.Draft202012Validator(PLAN_SCHEMA)
# Example files that are not plans, each named so that a new plan is never skipped.
NOT_PLANS = {
    "agent/replies.yaml",  # a scripted model's replies (forge run --model scripted:FILE)
    "mcp/policy.yaml",  # a deployment policy (forge run --policy)
    "mcp/servers.json",  # an mcpServers file (forge run --config)
}


def example_data():
    for path in sorted(EXAMPLES.rglob("*")):
        if path.suffix in (".json", ".yaml", ".yml") and (
            path.relative_to(EXAMPLES).as_posix() not in NOT_PLANS
        ):
            source = path.read_bytes()
            parse = parse_json if detect_format(source, path.name) == "json" else parse_yaml
            data = parse(source.decode(), DEFAULT_LIMITS)
            if path.relative_to(EXAMPLES).as_posix() == "demo/planner.yaml":  # a script
                for entry in [*data["answers"], data["otherwise"]]:
                    for index, document in enumerate(entry["plans"]):
                        name = entry.get("example", "otherwise")
                        yield pytest.param(document, id=f"{path.name}:{name}[{index}]")
            elif path.parent.name != "eval":
                yield pytest.param(data, id=path.name)
            elif path.name.endswith("answers.yaml"):  # a planner's plans, per case
                for case, documents in data.items():
                    for index, document in enumerate(documents):
                        yield pytest.param(document, id=f"{path.name}:{case}[{index}]")


def test_the_schema_is_a_valid_draft_2020_12_schema():
    jsonschema.Draft202012Validator.check_schema(PLAN_SCHEMA)


@pytest.mark.parametrize("data", list(example_data()))
def test_every_example_plan_is_valid_under_the_schema_and_reads(data):
    assert list(VALIDATOR.iter_errors(data)) == []
    from_data(data)


@pytest.mark.parametrize(
    "data",
    [
        {"goal": "g", "steps": [{"id": "a"}], "owner": "me"},
        {"goal": "g", "steps": [{"id": "has space"}]},
        {"goal": "g", "steps": [{"id": "a", "done_when": {"checks": "not a list"}}]},
        {"goal": "g", "steps": [{"id": "a", "retries": -1}]},
        {"goal": "g", "risk_level": "extreme", "steps": []},
        {"schema": "forge.plan/v2", "goal": "g", "steps": []},
    ],
    ids=["unknown field", "bad id", "checks not a list", "negative retries", "risk", "schema"],
)
def test_what_from_data_refuses_the_schema_refuses_too(data):
    assert list(VALIDATOR.iter_errors(data)) != []
    with pytest.raises(ValueError):
        from_data(data)
