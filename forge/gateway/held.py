"""Unbound calls (SPEC section 11): a call through the gateway that names no run. Which
pass at once and which are held for a person, the facts the approval rules match a held
call on, and where its approval token is bound.

A tool whose side effect for these arguments is ``none`` or ``read`` passes (the policy
permitting, audited), unless the policy or the tool asks for an approval anyway, or it
reads the open world at a URL off ``FORGE_HTTP_ALLOWED_HOSTS``; every other call is held
until a person other than the caller approves it."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any
from urllib.parse import urlsplit

from forge.compiler import ToolBinding
from forge.rules import Subject
from forge.tools import HostAllowList
from forge.tools.spec import CallRefusal

__all__ = [
    "GATEWAY_RUN",
    "HOLD_FREE",
    "NO_HOSTS",
    "call_subject",
    "held_step",
    "must_hold",
    "named_urls",
    "off_list_url",
]

NO_HOSTS = HostAllowList(frozenset())
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")

HOLD_FREE = frozenset({"none", "read"})
# The run and step names an approval token of a held call binds (forge.runtime.approvals),
# so that it can never pass for a run's step approval.
GATEWAY_RUN = "gateway"


def held_step(held_id: int) -> str:
    return f"held-{held_id}"


def must_hold(
    binding: ToolBinding, *, open_world: bool = False, hosts: HostAllowList = NO_HOSTS
) -> bool:
    """Whether ``binding`` (an unbound call, bound by the compiler's rules) waits for a
    person: it may change something, the policy or the tool asks for an approval, or it is
    an ``open_world`` read (``readOnlyHint`` without ``openWorldHint: false``, such as
    ``mcp-server-fetch``'s ``fetch``) whose arguments name a URL off ``hosts``
    (``FORGE_HTTP_ALLOWED_HOSTS``): a read of any URL can carry data out, so it is bound
    by the list ``http_request`` is bound by, or a person looks at it."""
    if binding.side_effect not in HOLD_FREE or binding.approval_reasons:
        return True
    return open_world and off_list_url(binding.args, hosts) is not None


def named_urls(value: Any) -> Iterator[str]:
    """Every string in ``value`` (arguments, at any depth) that is written as a URL."""
    if isinstance(value, str):
        if _URL.match(value.strip()):
            yield value.strip()
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from named_urls(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from named_urls(item)


def off_list_url(arguments: Mapping[str, Any], hosts: HostAllowList) -> CallRefusal | None:
    """Why the first URL of ``arguments`` that ``hosts`` does not allow is refused (a URL
    whose host cannot be read counts as off the list), or ``None``."""
    for url in named_urls(arguments):
        refusal = hosts.url_refusal(url)
        if refusal is None and not urlsplit_host(url):
            return CallRefusal("host_not_allowed", f"no host can be read in {url!r}", "")
        if refusal is not None:
            return refusal
    return None


def urlsplit_host(url: str) -> str:
    try:
        return urlsplit(url).hostname or ""
    except ValueError:
        return ""


def call_subject(binding: ToolBinding) -> Subject:
    """What the approval rules match a held call on: its tool, server, scope and side
    effect, as one step."""
    tool = binding.tool
    servers = (
        frozenset({tool.source.removeprefix("mcp:")})
        if tool.source.startswith("mcp:")
        else frozenset()
    )
    return Subject(
        side_effects=frozenset({binding.side_effect}),
        tools=frozenset({tool.name}),
        servers=servers,
        scopes=frozenset({tool.permission_scope}),
        steps=1,
    )
