"""OpenAICompatibleModel against a real local HTTP server speaking chat completions."""

from __future__ import annotations

import re
import socket

import httpx
import pytest

from forge.models import Message, ModelError, OpenAICompatibleModel, ToolCall
from forge.models.function_names import FunctionNames
from forge.tools import builtin_registry
from forge.tools.spec import ToolSpec

from .openai_fake import completion

FILE_READ = builtin_registry().get("file_read")


def model(server, **options) -> OpenAICompatibleModel:
    return OpenAICompatibleModel(server.base_url, "fake-model", options.pop("key", None), **options)


def test_tool_calls_come_back_with_their_ids_names_and_arguments(fake_openai):
    fake_openai.reply(None, [("file_read", {"path": "notes.md"}), ("noop", "")], tokens=42)

    reply = model(fake_openai).complete([Message.user("read the notes")], [FILE_READ])

    assert reply.tool_calls == (
        ToolCall("call_0", "file_read", {"path": "notes.md"}),
        ToolCall("call_1", "noop", {}),
    )
    assert (reply.content, reply.tokens, reply.model) == ("", 42, "fake-model")


def test_tools_are_offered_as_functions_with_their_argument_schemas(fake_openai):
    fake_openai.reply("done")

    model(fake_openai, key="sk-test").complete(
        [Message.system("be brief"), Message.user("hello")], [FILE_READ]
    )

    assert fake_openai.paths == ["/v1/chat/completions"]
    assert fake_openai.requests[0] == {
        "model": "fake-model",
        "messages": [
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": "hello"},
        ],
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "file_read",
                    "description": "Reads a file of the run's workspace.",
                    "parameters": dict(FILE_READ.args_schema),
                },
            }
        ],
    }
    assert fake_openai.headers[0]["Authorization"] == "Bearer sk-test"


def test_without_a_key_no_authorization_header_is_sent(fake_openai):
    fake_openai.reply("done")

    model(fake_openai).complete([Message.user("hello")])

    assert "Authorization" not in fake_openai.headers[0]
    assert "tools" not in fake_openai.requests[0]


def test_an_earlier_tool_call_and_its_result_are_sent_back_in_the_openai_shape(fake_openai):
    fake_openai.reply("done")
    call = ToolCall("call_7", "file_read", {"path": "a.md"})

    model(fake_openai).complete(
        [Message("assistant", "", (call,)), Message.tool("call_7", '{"ok": true}')]
    )

    assert fake_openai.messages() == [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_7",
                    "type": "function",
                    "function": {"name": "file_read", "arguments": '{"path": "a.md"}'},
                }
            ],
        },
        {"role": "tool", "content": '{"ok": true}', "tool_call_id": "call_7"},
    ]


LEDGER_READ = ToolSpec(
    "ledger.list_entries",
    "Lists the ledger's entries (an MCP server's tool, named as the catalogue names it).",
    {"type": "object", "properties": {}},
    "mcp.ledger",
)


def test_a_catalogue_name_openai_would_refuse_goes_by_a_name_it_accepts_and_comes_back(
    fake_openai,
):
    fake_openai.reply(None, [("ledger_list_entries", {})])
    fake_openai.reply("done")
    talk = model(fake_openai)

    first = talk.complete([Message.user("list the entries")], [LEDGER_READ, FILE_READ])
    second = talk.complete(
        [
            Message.user("list the entries"),
            Message("assistant", "", first.tool_calls),
            Message.tool("call_0", '{"entries": {}}'),
        ],
        [LEDGER_READ, FILE_READ],
    )

    offered = [tool["function"]["name"] for tool in fake_openai.requests[0]["tools"]]
    assert offered == ["ledger_list_entries", "file_read"]
    assert first.tool_calls == (ToolCall("call_0", "ledger.list_entries", {}),)
    assert fake_openai.messages(1)[1]["tool_calls"][0]["function"]["name"] == (
        "ledger_list_entries"
    )
    assert second.content == "done"  # the endpoint accepted both requests


def test_tools_whose_wire_names_would_collide_each_keep_their_own():
    names = FunctionNames.for_tools(["a_b", "a.b", "a b", "x." * 40])

    wires = [names.wire(name) for name in ["a_b", "a.b", "a b", "x." * 40]]

    assert wires[0] == "a_b" and len(set(wires)) == 4
    assert all(re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", wire) for wire in wires)
    assert [names.catalogue(wire) for wire in wires] == ["a_b", "a.b", "a b", "x." * 40]
    assert names.catalogue("not_offered") == "not_offered"


def test_a_name_openai_refuses_is_a_400_from_the_fake_as_from_openai(fake_openai):
    """The fake holds to OpenAI's rule, so the tests above can fail."""
    fake_openai.reply("never sent")
    with httpx.Client() as client:
        refused = client.post(
            f"{fake_openai.base_url}/chat/completions",
            json={"model": "m", "messages": [], "tools": [tool_schema_named("a.b")]},
        )

    assert refused.status_code == 400
    assert refused.json()["error"]["param"] == "tools[0].function.name"


def tool_schema_named(name: str) -> dict:
    return {"type": "function", "function": {"name": name, "parameters": {"type": "object"}}}


def test_the_price_per_thousand_tokens_gives_the_cost(fake_openai):
    fake_openai.reply("done", tokens=1500)

    reply = model(fake_openai, price_per_1k_tokens=0.002).complete([Message.user("hi")])

    assert reply.tokens == 1500
    assert reply.cost == pytest.approx(0.003)


def test_tokens_are_the_sum_of_prompt_and_completion_when_the_total_is_missing(fake_openai):
    body = completion("done")
    body["usage"] = {"prompt_tokens": 11, "completion_tokens": 4}
    fake_openai.respond(200, body)

    assert model(fake_openai).complete([Message.user("hi")]).tokens == 15


def test_a_response_format_is_sent_as_given(fake_openai):
    fake_openai.reply("{}")
    wanted = {"type": "json_object"}

    model(fake_openai).complete([Message.user("hi")], response_format=wanted)

    assert fake_openai.requests[0]["response_format"] == wanted


def test_an_http_error_is_a_model_error_with_the_status_and_the_endpoints_message(fake_openai):
    fake_openai.respond(401, {"error": {"message": "Incorrect API key provided"}})

    with pytest.raises(ModelError) as caught:
        model(fake_openai, key="sk-secret").complete([Message.user("hi")])

    assert caught.value.code == "model_http_error"
    assert caught.value.status == 401
    assert "answered 401: Incorrect API key provided" in caught.value.message
    assert "sk-secret" not in caught.value.message


def test_a_slow_endpoint_is_a_timeout(fake_openai):
    fake_openai.respond(200, completion("late"), delay_s=1.0)

    with pytest.raises(ModelError) as caught:
        model(fake_openai, timeout_s=0.2).complete([Message.user("hi")])

    assert caught.value.code == "model_timeout"


def test_a_body_that_is_not_a_chat_completion_is_an_invalid_response(fake_openai):
    fake_openai.respond(200, b"<html>gateway</html>")
    fake_openai.respond(200, {"choices": []})

    for _ in range(2):
        with pytest.raises(ModelError) as caught:
            model(fake_openai).complete([Message.user("hi")])
        assert caught.value.code == "model_invalid_response"


def test_a_body_over_the_size_cap_is_refused(fake_openai):
    fake_openai.reply("x" * 5000)

    with pytest.raises(ModelError, match="more than 1000 bytes") as caught:
        model(fake_openai, max_response_bytes=1000).complete([Message.user("hi")])

    assert caught.value.code == "model_invalid_response"


def test_an_endpoint_nobody_listens_on_is_unreachable():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    unreachable = OpenAICompatibleModel(f"http://127.0.0.1:{port}/v1", "m", timeout_s=2)

    with pytest.raises(ModelError) as caught:
        unreachable.complete([Message.user("hi")])

    assert caught.value.code == "model_unreachable"


def test_tool_arguments_that_are_not_a_json_object_are_kept_as_the_calls_error(fake_openai):
    fake_openai.reply(None, [("file_read", "{not json"), ("file_read", "[1, 2]")])

    first, second = model(fake_openai).complete([Message.user("hi")]).tool_calls

    assert first.arguments == {} and first.error.startswith("the arguments are not JSON")
    assert second.error == "the arguments are not a JSON object"
