"""``forge eval --planner SPEC``: the answers file is the evaluation's own; every other
spec is read by production's ``forge.planners.config`` and metered."""

from __future__ import annotations

from pathlib import Path

import pytest

from forge.evaluation import PlannerSpecError, planner_from_spec, read_suite, registry_of
from forge.evaluation.planners import MeteredModel
from forge.models.config import Endpoint
from forge.planners import LLMPlanner

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "eval"
SUITE = read_suite(EXAMPLES / "seed-003.yaml")
ENDPOINT = Endpoint("http://127.0.0.1:9/v1", "sk-test", timeout_s=5.0)


@pytest.mark.parametrize("spec", ["openai:fake-model", "llm:fake-model", " openai:fake-model "])
def test_an_llm_spec_is_production_s_planner_over_one_metered_model(spec):
    made = planner_from_spec(spec, SUITE, ENDPOINT)
    try:
        tools = tuple(registry_of(SUITE))
        first = made.factory(SUITE.cases[0], tools)
        second = made.factory(SUITE.cases[1], tools)

        assert made.name == "llm:fake-model"
        assert isinstance(first, LLMPlanner) and isinstance(second, LLMPlanner)
        assert first is not second and first.model is second.model  # one meter per suite
        assert isinstance(first.model, MeteredModel) and made.models == (first.model,)
        assert first.model.inner.url == "http://127.0.0.1:9/v1/chat/completions"
        assert first.tools == tools
    finally:
        for model in made.models:
            model.close()


@pytest.mark.parametrize(
    ("spec", "endpoint", "message"),
    [
        ("magic:8ball", None, "--planner takes scripted:FILE, llm:MODEL or openai:MODEL"),
        ("openai:", None, "--planner takes scripted:FILE"),
        ("scripted:", None, "--planner takes scripted:FILE"),
        ("openai:m", Endpoint(timeout_s=0), "--planner openai:m: timeout_s must be positive"),
    ],
)
def test_a_spec_that_names_no_planner_is_refused_with_a_stable_code(spec, endpoint, message):
    with pytest.raises(PlannerSpecError) as refused:
        planner_from_spec(spec, SUITE, endpoint)

    assert refused.value.code == "invalid_planner"
    assert message in str(refused.value)
