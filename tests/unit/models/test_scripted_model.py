"""ScriptedModel, script files, and models named as on the command line."""

from __future__ import annotations

import pytest

from forge.models import (
    Message,
    ModelError,
    ModelReply,
    OpenAICompatibleModel,
    ScriptedModel,
    ScriptError,
    ToolCall,
    model_from_spec,
)
from forge.models.config import DEFAULT_BASE_URL, Endpoint, ModelSpecError
from forge.tools import builtin_registry


def test_it_replays_its_replies_in_order_and_keeps_what_it_was_shown():
    model = ScriptedModel([ModelReply("first", tokens=3), "second"])
    echo = builtin_registry().get("echo")

    first = model.complete([Message.user("one")], [echo])
    second = model.complete([Message.user("two")], response_format={"type": "json_object"})

    assert (first.content, first.tokens, first.model) == ("first", 3, "scripted")
    assert second.content == "second"
    assert [call.tools for call in model.calls] == [("echo",), ()]
    assert model.calls[1].messages == (Message.user("two"),)
    assert model.calls[1].response_format == {"type": "json_object"}


def test_a_scripted_model_that_runs_out_says_so():
    with pytest.raises(ModelError) as caught:
        ScriptedModel([]).complete([Message.user("hi")])

    assert caught.value.code == "model_exhausted"


def test_a_script_file_gives_tool_calls_answers_and_usage(tmp_path):
    script = tmp_path / "replies.yaml"
    script.write_text(
        "- tool_calls: [{name: sql_read, arguments: {query: select 1}}]\n"
        "  tokens: 12\n"
        "- content: {facts: [a]}\n"
        "- plain text answer\n"
    )

    model = ScriptedModel.from_file(script)
    replies = [model.complete([]) for _ in range(3)]

    assert model.name == "scripted:replies.yaml"
    assert replies[0].tool_calls == (ToolCall("call_0", "sql_read", {"query": "select 1"}),)
    assert replies[0].tokens == 12
    assert replies[1].content == '{"facts": ["a"]}'
    assert replies[2].content == "plain text answer"


@pytest.mark.parametrize(
    "text",
    ["{content: x}", "- {content: x, mood: happy}", "- {tool_calls: [{arguments: {}}]}", "- 3"],
)
def test_a_script_of_the_wrong_shape_is_refused(tmp_path, text):
    script = tmp_path / "replies.yaml"
    script.write_text(text)

    with pytest.raises(ScriptError) as caught:
        ScriptedModel.from_file(script)

    assert caught.value.code == "invalid_model_script"


def test_openai_models_take_the_endpoint_and_the_key_from_the_environment():
    environ = {"OPENAI_API_KEY": "sk-openai", "FORGE_MODEL_API_KEY": "sk-forge"}

    endpoint = Endpoint.from_env(environ, base_url="http://127.0.0.1:9/v1")
    model = model_from_spec("openai:gpt-test", endpoint)

    assert endpoint.api_key == "sk-forge"
    assert isinstance(model, OpenAICompatibleModel)
    assert (model.url, model.name) == ("http://127.0.0.1:9/v1/chat/completions", "openai:gpt-test")
    assert Endpoint.from_env({"OPENAI_API_KEY": "sk-openai"}).api_key == "sk-openai"
    assert Endpoint.from_env({}).base_url == DEFAULT_BASE_URL
    assert Endpoint.from_env({"FORGE_MODEL_BASE_URL": "http://x/v1"}).base_url == "http://x/v1"


@pytest.mark.parametrize("spec", ["gpt-4o", "openai:", "anthropic:claude", "scripted:"])
def test_a_model_spec_of_another_shape_is_refused(spec):
    with pytest.raises(ModelSpecError, match="openai:MODEL or scripted:FILE"):
        model_from_spec(spec)
