"""Which unbound calls the gateway holds (forge.gateway.held): changes always, reads
never, except an open-world read of a URL off the allow list."""

from __future__ import annotations

from forge.compiler import bind_call
from forge.gateway.held import call_subject, must_hold, named_urls, off_list_url
from forge.plan import Step
from forge.tools import HostAllowList, Policy, PolicyEngine, ToolRegistry, ToolSpec

FETCH = ToolSpec(
    "web.fetch", "Fetch a URL", {"type": "object"}, "mcp.web", side_effect="read", source="mcp:web"
)
WRITE = ToolSpec(
    "web.post", "Post to a URL", {"type": "object"}, "mcp.web", side_effect="write",
    idempotent=False, risk="medium", source="mcp:web",
)  # fmt: skip
REGISTRY = ToolRegistry([FETCH, WRITE])
POLICY = PolicyEngine(Policy.allowing(["mcp.web"]))
HOSTS = HostAllowList.of(["docs.example.com"])
STEP = Step(id="gateway")


def bound(tool: str, args: dict) -> object:
    return bind_call(REGISTRY, POLICY, tool, args, STEP)


def test_a_change_is_always_held():
    assert must_hold(bound("web.post", {"url": "https://docs.example.com"}), hosts=HOSTS)


def test_a_closed_world_read_passes_whatever_it_names():
    assert not must_hold(bound("web.fetch", {"url": "http://10.0.0.1/"}), hosts=HOSTS)


def test_an_open_world_read_passes_only_for_urls_on_the_list():
    allowed = bound("web.fetch", {"url": "https://docs.example.com/a", "depth": 1})
    internal = bound("web.fetch", {"urls": ["https://docs.example.com", "http://10.0.0.1/"]})
    no_url = bound("web.fetch", {"query": "weather"})

    assert not must_hold(allowed, open_world=True, hosts=HOSTS)
    assert must_hold(internal, open_world=True, hosts=HOSTS)
    assert not must_hold(no_url, open_world=True, hosts=HOSTS)


def test_urls_are_found_at_any_depth_and_judged_by_the_allow_list():
    args = {"a": [{"b": " ftp://files.example.com/x "}], "c": "not a url", "d": 3}

    assert list(named_urls(args)) == ["ftp://files.example.com/x"]
    assert off_list_url(args, HOSTS).code == "host_not_allowed"
    assert off_list_url({"u": "https://DOCS.example.com/"}, HOSTS) is None
    assert off_list_url({"u": "https:///no-host"}, HOSTS).code == "host_not_allowed"


def test_the_rules_match_a_held_call_on_its_tool_server_scope_and_effect():
    subject = call_subject(bound("web.post", {}))

    assert (subject.tools, subject.servers, subject.scopes, subject.side_effects) == (
        frozenset({"web.post"}),
        frozenset({"web"}),
        frozenset({"mcp.web"}),
        frozenset({"write"}),
    )
