import pytest

from forge.tools import ArgumentsInvalid, ToolRegistry, ToolSpec, UnknownTool, builtin_registry

BUILTIN_NAMES = [
    "echo", "fail", "file_read", "file_search", "file_write", "http_request", "noop", "shell",
    "sleep", "sql_read",
]  # fmt: skip


def test_the_builtin_catalogue_holds_the_tools_of_the_spec():
    assert [spec.name for spec in builtin_registry()] == BUILTIN_NAMES


def test_an_unknown_tool_is_refused_with_its_code():
    with pytest.raises(UnknownTool) as caught:
        builtin_registry().get("teleport")

    assert caught.value.code == "unknown_tool"
    assert str(caught.value) == "unknown tool 'teleport'"


def test_arguments_are_validated_against_the_tools_json_schema():
    registry = builtin_registry()
    registry.validate_args("sleep", {"seconds": 1.5})

    with pytest.raises(ArgumentsInvalid, match="seconds") as caught:
        registry.validate_args("sleep", {"seconds": "soon"})
    assert caught.value.code == "invalid_args"


def test_shell_takes_an_argv_list_never_a_shell_string():
    registry = builtin_registry()
    registry.validate_args("shell", {"argv": ["echo", "hi"]})

    with pytest.raises(ArgumentsInvalid):
        registry.validate_args("shell", {"argv": "echo hi; rm -rf /"})


def test_a_tool_name_can_be_registered_once():
    spec = ToolSpec("x", "x", {"type": "object"}, "compute")
    registry = ToolRegistry([spec])

    with pytest.raises(ValueError, match="already registered"):
        registry.register(spec)


def test_http_requests_read_on_get_and_act_externally_otherwise():
    http = builtin_registry().get("http_request")

    assert http.effective_side_effect({"method": "GET", "url": "https://x"}) == "read"
    assert http.effective_side_effect({"method": "POST", "url": "https://x"}) == "external"


def test_only_harmless_or_idempotent_tools_are_repeatable():
    registry = builtin_registry()

    assert registry.get("file_read").repeatable
    assert registry.get("file_write").repeatable
    assert not registry.get("shell").repeatable


def test_the_read_tools_of_the_seed_example_only_read():
    registry = builtin_registry()

    assert registry.get("file_search").permission_scope == "file_read"
    assert registry.get("sql_read").permission_scope == "database_read"
    assert registry.get("file_search").side_effect == "read"
    assert registry.get("sql_read").side_effect == "read"
