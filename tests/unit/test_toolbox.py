"""The deployment's toolbox over hand-written MCP connections: snapshots made only when
something changed, discovery again when due, a server that is down (or misbehaves) left
out with its reason while the rest stays, and the real servers behind one config."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from forge.compiler import GraphCompiler
from forge.plan import from_data
from forge.runners.mcp_config import McpServerConfig
from forge.runners.mcp_connection import McpDiscovery
from forge.toolbox import McpConfigError, Toolbox, build_toolbox
from forge.tools import Policy, PolicyEngine, ToolSpec
from tests.fixtures.ledger import Ledger


def spec(name: str, side_effect: str = "read", schema: dict | None = None) -> ToolSpec:
    server = name.partition(".")[0]
    return ToolSpec(
        name=name,
        description=name,
        args_schema=schema or {"type": "object"},
        permission_scope=f"mcp.{server}",
        side_effect=side_effect,  # type: ignore[arg-type]
        source=f"mcp:{server}",
    )


@dataclass
class FakeConnection:
    """Answers what the test sets; counts discoveries."""

    name: str
    tools: list[ToolSpec] = field(default_factory=list)
    error: str = ""
    stale: bool = False
    discoveries: int = 0
    closed: bool = False

    @property
    def config(self) -> McpServerConfig:
        return McpServerConfig(self.name, ("fake",))

    def discover(self) -> McpDiscovery:
        self.discoveries += 1
        self.stale = False
        if self.error:
            return McpDiscovery(self.name, error=self.error)
        return McpDiscovery(self.name, tuple((tool, object()) for tool in self.tools))  # type: ignore[misc]

    def close(self) -> None:
        self.closed = True


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def toolbox(*connections: FakeConnection, refresh_s: float | None = 60, clock=None) -> Toolbox:
    return Toolbox((), connections, refresh_s, clock or Clock())  # type: ignore[arg-type]


def test_servers_are_asked_on_the_first_snapshot_not_before():
    time = FakeConnection("time", [spec("time.now")])
    box = toolbox(time)

    assert time.discoveries == 0
    assert [tool.name for tool in box.snapshot().registry] == ["time.now"]
    assert time.discoveries == 1


def test_the_snapshot_is_kept_until_the_refresh_interval_has_passed():
    clock = Clock()
    time = FakeConnection("time", [spec("time.now")])
    box = toolbox(time, clock=clock)
    first = box.snapshot()

    clock.now += 59
    assert box.snapshot() is first and time.discoveries == 1
    clock.now += 1
    assert box.snapshot() is first  # asked again, and nothing changed: the same snapshot
    assert time.discoveries == 2


def test_a_changed_tool_makes_a_new_snapshot_with_the_next_generation():
    clock = Clock()
    time = FakeConnection("time", [spec("time.now")])
    box = toolbox(time, clock=clock)
    first = box.snapshot()

    time.tools = [spec("time.now", side_effect="delete")]
    clock.now += 60
    second = box.snapshot()

    assert (first.generation, second.generation) == (1, 2)
    assert second.registry.get("time.now").side_effect == "delete"
    assert first.registry.get("time.now").side_effect == "read"  # snapshots never change


def test_a_stale_connection_is_asked_again_at_once():
    time = FakeConnection("time", [spec("time.now")])
    box = toolbox(time)
    box.snapshot()

    time.stale = True
    box.snapshot()

    assert time.discoveries == 2


def test_without_a_refresh_interval_servers_are_asked_once():
    clock = Clock()
    time = FakeConnection("time", [spec("time.now")])
    box = toolbox(time, refresh_s=None, clock=clock)
    box.snapshot()

    clock.now += 10_000
    box.snapshot()

    assert time.discoveries == 1


def test_current_never_asks_a_server_once_there_is_a_snapshot():
    clock = Clock()
    time = FakeConnection("time", [spec("time.now")])
    box = toolbox(time, clock=clock)
    first = box.current()
    clock.now += 3600

    assert box.current() is first
    assert time.discoveries == 1


def test_a_server_that_is_down_is_left_out_with_its_reason_and_the_rest_stays():
    time = FakeConnection("time", [spec("time.now")])
    mail = FakeConnection("mail", error="MCP server 'mail' did not start (connection refused)")
    box = toolbox(time, mail)

    registry = box.snapshot().registry

    assert [tool.name for tool in registry] == ["time.now"]
    assert registry.unavailable_reason("mail.send") == (
        "MCP server 'mail' did not start (connection refused)"
    )
    assert registry.unavailable_reason("time.later") is None  # up: unknown, not unavailable
    statuses = {status.name: status for status in box.servers()}
    assert (statuses["time"].available, statuses["time"].tools) == (True, ("time.now",))
    assert (statuses["mail"].available, statuses["mail"].tools) == (False, ())
    assert statuses["mail"].error.endswith("(connection refused)")


def test_a_server_coming_back_brings_its_tools_back():
    clock = Clock()
    mail = FakeConnection("mail", error="down")
    box = toolbox(mail, clock=clock)
    box.snapshot()

    mail.error, mail.tools = "", [spec("mail.send", side_effect="external")]
    clock.now += 60
    registry = box.snapshot().registry

    assert "mail.send" in registry
    assert registry.unavailable == {}


def test_a_server_whose_tool_ids_collide_is_left_out_instead_of_crashing():
    first = FakeConnection("a", [spec("a.x"), spec("a.x")])
    second = FakeConnection("b", [spec("b.y")])

    registry = toolbox(first, second).snapshot().registry

    assert [tool.name for tool in registry] == ["b.y"]
    assert registry.unavailable == {"a": "its tool id 'a.x' is already taken"}


def test_a_server_with_a_schema_that_is_not_json_schema_is_left_out():
    odd = FakeConnection("odd", [spec("odd.x", schema={"type": "object", "pattern": "("})])

    registry = toolbox(odd).snapshot().registry

    assert list(registry) == []
    assert registry.unavailable["odd"].startswith("a tool's input schema is not valid JSON Schema")


def test_a_server_with_a_schema_dialect_forge_cannot_enforce_is_left_out_saying_so():
    schema = {"$schema": "https://example.com/dialect", "type": "object"}
    odd = FakeConnection("odd", [spec("odd.x", schema=schema)])

    registry = toolbox(odd).snapshot().registry

    assert list(registry) == []
    assert registry.unavailable["odd"] == (
        "tool 'odd.x': its argument schema declares $schema 'https://example.com/dialect', "
        "a dialect Forge cannot validate (it knows JSON Schema drafts 4, 6, 7, 2019-09 and "
        "2020-12)"
    )


def test_closing_the_toolbox_closes_every_connection():
    time, mail = FakeConnection("time"), FakeConnection("mail")

    with toolbox(time, mail):
        pass

    assert time.closed and mail.closed


def test_two_servers_with_one_name_are_refused():
    with pytest.raises(McpConfigError) as caught:
        build_toolbox(mcp_servers=[McpServerConfig("a", ("x",)), McpServerConfig("a", ("y",))])

    assert caught.value.message == "MCP server name(s) given twice: a"


def test_a_real_server_s_tools_compile_next_to_the_built_ins_and_a_dead_one_is_diagnosed(
    tmp_path,
):
    ledger = Ledger.at(tmp_path / "ledger", rent=900)
    servers = [
        McpServerConfig("ledger", tuple(ledger.command)),
        McpServerConfig("gone", ("python3", "-c", "raise SystemExit(3)")),
    ]
    document = from_data(
        {
            "goal": "Tidy the ledger",
            "steps": [
                {"id": "look", "description": "List the ledger entries",
                 "tool": "ledger.list_entries"},
                {"id": "ask", "description": "Ask the gone server", "tool": "gone.anything",
                 "depends_on": ["look"]},
            ],
        }
    )  # fmt: skip
    policy = PolicyEngine(Policy.allowing(["mcp.ledger", "mcp.gone"]))

    with build_toolbox(mcp_servers=servers, python_tools=False) as box:
        result = GraphCompiler(box.registry, policy).compile(document)
        builtins_kept = "echo" in box.registry

    assert builtins_kept
    [problem] = result.errors
    assert (problem.code, problem.nodes) == ("tool_unavailable", ("ask",))
    assert problem.message.startswith(
        "step 'ask' uses tool 'gone.anything' of MCP server 'gone', which is not available: "
        "MCP server 'gone' did not start ("
    )
