"""The names tools go by on a model endpoint's wire.

OpenAI's chat completions refuse a function name outside ``^[a-zA-Z0-9_-]{1,64}$`` with
400 (Anthropic's API, and most servers that copy OpenAI's, have the same rule), and the
catalogue names an MCP server's tools ``<server>.<tool>``: an agent step allowed
``ledger.list_entries`` would fail on its first turn. So a request names each tool by a
wire name that keeps to that pattern (``ledger_list_entries``), and the reply's calls are
mapped back to the catalogue's names before anything else sees them. A name that already
keeps to the pattern is its own wire name; one that would collide with another tool's
takes a short hash of its catalogue name.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

__all__ = ["FunctionNames"]

_VALID = re.compile(r"[a-zA-Z0-9_-]{1,64}")
_OUTSIDE = re.compile(r"[^a-zA-Z0-9_-]")
_LENGTH = 64


@dataclass(frozen=True)
class FunctionNames:
    """Catalogue name to wire name and back, for the tools of one request."""

    to_wire: Mapping[str, str]
    from_wire: Mapping[str, str]

    @classmethod
    def for_tools(cls, names: Iterable[str]) -> FunctionNames:
        ordered = list(dict.fromkeys(names))
        to_wire = {name: name for name in ordered if _VALID.fullmatch(name)}
        taken = set(to_wire)
        for name in ordered:
            if name in to_wire:
                continue
            wire = _OUTSIDE.sub("_", name)[:_LENGTH] or "tool"
            if wire in taken:
                wire = _hashed(name)
            taken.add(wire)
            to_wire[name] = wire
        return cls(to_wire, {wire: name for name, wire in to_wire.items()})

    def wire(self, name: str) -> str:
        return self.to_wire[name]

    def catalogue(self, wire_name: str) -> str:
        """The catalogue's name for ``wire_name``; a name no tool of the request goes by
        is returned as it came, for the caller to refuse as an unknown tool."""
        return self.from_wire.get(wire_name, wire_name)


def _hashed(name: str) -> str:
    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    return f"{_OUTSIDE.sub('_', name)[: _LENGTH - 9]}_{digest}"
