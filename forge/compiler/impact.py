"""A compiled version's impact: what it will touch, which approvals it will ask, what it
may cost and how long it should take, for the person who approves it (seed 003's checks
before a plan runs).

Everything is read from the ``ExecutableGraph``, whose bindings carry the tools' specs
and the policy's approval reasons, so the summary says what the compiler decided, not
what the author claimed:

- the tools a step calls or an agent step may call, and their permission scopes;
- side-effect classes with their step counts (an agent step counts as the most its
  allowed tools can do);
- external systems: HTTP hosts (from ``http_request``'s URL, also when it is built with
  ``$join`` from literal text and later outputs, as long as the text names the host),
  MCP servers with the tools used, files written (``file_write``'s path) and shell
  commands (``argv``, a value from an earlier step shown as ``{step.path}``); where the
  plan leaves it to run time (a URL taken whole from an output, an agent step allowed
  ``http_request``) the steps are listed as unknown;
- approvals: the version's own, each step that will pause and why, and each milestone
  review;
- tokens and cost: the sums of the steps' ``estimate``, with how many steps carry one;
- duration: the critical path through the dependency graph of the steps' duration
  estimates (``estimate.seconds``, else a ``sleep`` step's ``seconds``); steps without
  one count as zero and are listed, so the figure is a lower bound unless that list is
  empty, and time spent waiting for people is never in it.

``Impact.to_data``/``from_data`` give the JSON stored with each version, and
``compare_impact`` says what changed between two versions, one sentence per change.
"""

from __future__ import annotations

import math
import shlex
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from forge.compiler.budget import estimate_budget
from forge.compiler.graph import ExecutableGraph, ExecutableNode
from forge.plan.jsontext import json_number
from forge.plan.references import FROM, JOIN, LITERAL
from forge.tools import SIDE_EFFECTS, WRITE_CLASSES, ToolSpec

__all__ = [
    "Duration",
    "Impact",
    "McpUse",
    "StepPause",
    "call_host",
    "compare_impact",
    "duration_text",
    "impact_of",
    "seconds_text",
]

_HOLE = "\x00"  # stands for a value known only at run time while a host is parsed
_REACHING_OUT = frozenset({"http_request", "file_write", "shell"})  # their hosts, files, commands


@dataclass(frozen=True)
class Duration:
    """The critical path of the steps' duration estimates, in seconds; ``path`` is its
    steps in order, ``unknown`` the steps without an estimate (counted as zero)."""

    seconds: float = 0.0
    path: tuple[str, ...] = ()
    unknown: tuple[str, ...] = ()

    @property
    def complete(self) -> bool:
        return not self.unknown


@dataclass(frozen=True)
class McpUse:
    """One MCP server a version uses, and which of its tools."""

    server: str
    tools: tuple[str, ...]


@dataclass(frozen=True)
class StepPause:
    """A step that will wait for a person's approval at run time, and why."""

    step: str
    reasons: tuple[str, ...]


@dataclass(frozen=True)
class Impact:
    steps: int
    scopes: tuple[str, ...] = ()
    tools: tuple[str, ...] = ()  # every tool a step calls or an agent step may call
    side_effects: tuple[tuple[str, int], ...] = ()  # (class, steps), in SIDE_EFFECTS order
    agent_steps: int = 0
    hosts: tuple[str, ...] = ()
    hosts_unknown: tuple[str, ...] = ()  # steps whose host is decided at run time
    mcp: tuple[McpUse, ...] = ()
    files_written: tuple[str, ...] = ()
    files_unknown: tuple[str, ...] = ()  # steps that write a file named at run time
    commands: tuple[str, ...] = ()
    pauses: tuple[StepPause, ...] = ()
    reviews: tuple[str, ...] = ()  # milestones that end in a person's review
    plan_scopes: tuple[str, ...] = ()  # requires_approval_before, as the plan lists them
    tokens: int = 0
    cost: float = 0.0
    estimated_steps: int = 0  # steps with a token or cost estimate
    duration: Duration = Duration()

    @property
    def writes(self) -> int:
        """How many steps may change something (a write-class side effect)."""
        return sum(count for effect, count in self.side_effects if effect in WRITE_CLASSES)

    def lines(self) -> list[str]:
        """The summary as short sentences, for a terminal."""
        out = [f"scopes: {', '.join(self.scopes) or 'none'}"]
        effects = ", ".join(f"{effect} {count}" for effect, count in self.side_effects)
        agents = f" ({self.agent_steps} agent step(s) counted by their tools)"
        out.append(f"side effects: {effects or 'none'}" + (agents if self.agent_steps else ""))
        out.append(f"hosts: {_listed(self.hosts, self.hosts_unknown)}")
        servers = [f"{use.server} ({', '.join(use.tools)})" for use in self.mcp]
        out.append(f"MCP servers: {', '.join(servers) or 'none'}")
        out.append(f"files written: {_listed(self.files_written, self.files_unknown)}")
        out.append(f"commands: {'; '.join(self.commands) or 'none'}")
        asks = ["the version itself, by someone other than its author"]
        asks += [f"step {pause.step} ({'; '.join(pause.reasons)})" for pause in self.pauses]
        asks += [f"review after milestone {milestone}" for milestone in self.reviews]
        out.append(f"approvals: {len(asks)}: " + "; ".join(asks))
        out.append(
            f"estimate: {self.tokens} tokens, cost {self.cost:g} "
            f"({self.estimated_steps} of {self.steps} steps estimated)"
        )
        out.append(f"duration: {duration_text(self.duration)}")
        return out

    def to_data(self) -> dict[str, Any]:
        return {
            "steps": self.steps,
            "scopes": list(self.scopes),
            "tools": list(self.tools),
            "side_effects": dict(self.side_effects),
            "agent_steps": self.agent_steps,
            "hosts": list(self.hosts),
            "hosts_unknown": list(self.hosts_unknown),
            "mcp": [{"server": use.server, "tools": list(use.tools)} for use in self.mcp],
            "files_written": list(self.files_written),
            "files_unknown": list(self.files_unknown),
            "commands": list(self.commands),
            "pauses": [{"step": p.step, "reasons": list(p.reasons)} for p in self.pauses],
            "reviews": list(self.reviews),
            "plan_scopes": list(self.plan_scopes),
            "tokens": self.tokens,
            "cost": self.cost,
            "estimated_steps": self.estimated_steps,
            "duration": {
                "seconds": self.duration.seconds,
                "path": list(self.duration.path),
                "unknown": list(self.duration.unknown),
                "text": duration_text(self.duration),
            },
        }

    def plain_data(self) -> dict[str, Any]:
        """``to_data()`` for ``forge.plan.jsontext.indented_plain``: the same JSON."""
        data = self.to_data()
        data["cost"] = json_number(data["cost"])
        data["duration"]["seconds"] = json_number(data["duration"]["seconds"])
        return data

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> Impact:
        """The inverse of ``to_data`` (stored JSON back to a value)."""
        duration = data.get("duration") or {}
        effects = data.get("side_effects") or {}
        return cls(
            steps=int(data.get("steps", 0)),
            scopes=tuple(data.get("scopes", ())),
            tools=tuple(data.get("tools", ())),
            side_effects=tuple(
                (effect, int(effects[effect])) for effect in SIDE_EFFECTS if effect in effects
            ),
            agent_steps=int(data.get("agent_steps", 0)),
            hosts=tuple(data.get("hosts", ())),
            hosts_unknown=tuple(data.get("hosts_unknown", ())),
            mcp=tuple(
                McpUse(str(use["server"]), tuple(use.get("tools", ())))
                for use in data.get("mcp", ())
            ),
            files_written=tuple(data.get("files_written", ())),
            files_unknown=tuple(data.get("files_unknown", ())),
            commands=tuple(data.get("commands", ())),
            pauses=tuple(
                StepPause(str(p["step"]), tuple(p.get("reasons", ())))
                for p in data.get("pauses", ())
            ),
            reviews=tuple(data.get("reviews", ())),
            plan_scopes=tuple(data.get("plan_scopes", ())),
            tokens=int(data.get("tokens", 0)),
            cost=float(data.get("cost", 0.0)),
            estimated_steps=int(data.get("estimated_steps", 0)),
            duration=Duration(
                float(duration.get("seconds", 0.0)),
                tuple(duration.get("path", ())),
                tuple(duration.get("unknown", ())),
            ),
        )


def impact_of(graph: ExecutableGraph) -> Impact:
    """The impact of a compiled version, in one pass over its nodes (topological order).

    Scopes and MCP servers depend on the tools alone, so the pass collects each tool
    once and they are read from those after it."""
    document = graph.document
    nodes = graph.nodes
    tools_used: dict[str, ToolSpec] = {}
    effects: list[str] = []
    agents = 0
    hosts: dict[str, None] = {}
    hosts_unknown: list[str] = []
    files: dict[str, None] = {}
    files_unknown: list[str] = []
    commands: dict[str, None] = {}
    pauses: list[StepPause] = []
    finish: dict[str, float] = {}
    before: dict[str, str | None] = {}
    unknown: list[str] = []
    for node_id in graph.order:
        node = nodes[node_id]
        binding = node.binding
        name = None
        if binding is not None:
            tool = binding.tool
            name = tool.name
            tools_used[name] = tool
            effects.append(binding.side_effect)
            if name in _REACHING_OUT:
                args = binding.args
                if name == "http_request":
                    host = call_host(args.get("url"))
                    if host:
                        hosts.setdefault(host, None)
                    else:
                        hosts_unknown.append(node_id)
                elif name == "file_write":
                    path = _text(args.get("path"))
                    if path is not None and "{" not in path:
                        files.setdefault(path, None)
                    else:
                        files_unknown.append(node_id)
                else:
                    commands.setdefault(_command(args.get("argv")), None)
        else:
            agents += 1
            tools = node.allowed_tools
            for tool in tools:
                tools_used[tool.name] = tool
            effects.append(
                max((tool.side_effect for tool in tools), key=SIDE_EFFECTS.index, default="none")
            )
            names = {tool.name for tool in tools}
            if "http_request" in names:
                hosts_unknown.append(node_id)
            if "file_write" in names:
                files_unknown.append(node_id)
        if node.approval_reasons:
            pauses.append(StepPause(node_id, node.approval_reasons))
        estimate = node.step.estimate
        seconds = None
        if estimate is not None and estimate.seconds is not None:
            seconds = float(estimate.seconds)
        if seconds is None and name == "sleep":
            seconds = _sleep_seconds(node)
        if seconds is None:
            unknown.append(node_id)
            seconds = 0.0
        start, after = 0.0, None
        for dep in node.depends_on:  # the dependency that finishes last comes before
            ends = finish[dep]
            if after is None or ends > start:
                start, after = ends, dep
        finish[node_id] = start + seconds
        before[node_id] = after
    servers: dict[str, list[str]] = {}
    for tool in tools_used.values():
        if tool.source.startswith("mcp:"):
            servers.setdefault(tool.source.removeprefix("mcp:"), []).append(tool.name)
    counted = Counter(effects)
    budget = estimate_budget(document)
    return Impact(
        steps=len(graph.order),
        scopes=tuple(sorted({tool.permission_scope for tool in tools_used.values()})),
        tools=tuple(sorted(tools_used)),
        side_effects=tuple((e, counted[e]) for e in SIDE_EFFECTS if e in counted),
        agent_steps=agents,
        hosts=tuple(sorted(hosts)),
        hosts_unknown=tuple(hosts_unknown),
        mcp=tuple(McpUse(server, tuple(sorted(servers[server]))) for server in sorted(servers)),
        files_written=tuple(sorted(files)),
        files_unknown=tuple(files_unknown),
        commands=tuple(commands),
        pauses=tuple(pauses),
        reviews=tuple(milestone.id for milestone in document.milestones if milestone.review),
        plan_scopes=document.requires_approval_before,
        tokens=int(budget.line("tokens").estimate),  # the budget check's own figures
        cost=budget.line("cost").estimate,
        estimated_steps=budget.estimated_steps,
        duration=_critical_path(finish, before, unknown),
    )


def _critical_path(
    finish: Mapping[str, float], before: Mapping[str, str | None], unknown: list[str]
) -> Duration:
    if not finish:
        return Duration()
    # The first step that finishes last, in topological order: the same in every process.
    end = max(finish, key=lambda node_id: finish[node_id])
    path: list[str] = []
    current: str | None = end
    while current is not None:
        path.append(current)
        current = before[current]
    return Duration(round(finish[end], 3), tuple(reversed(path)), tuple(unknown))


def _sleep_seconds(node: ExecutableNode) -> float | None:
    """A ``sleep`` step's duration, from its arguments when they are known now."""
    binding = node.binding
    if binding is not None and binding.concrete:
        seconds = binding.args.get("seconds")
        if isinstance(seconds, int | float) and not isinstance(seconds, bool):
            return float(seconds)
    return None


def _text(value: Any, hole: str | None = None) -> str | None:
    """An argument as text: a string as it is, a ``$literal`` string, a ``$join`` with
    each value from an earlier step as ``{step.path}`` (or ``hole``); ``None`` for a
    value known only at run time or not text."""
    if isinstance(value, str):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, Mapping):
        if LITERAL in value:
            inner = value[LITERAL]
            return inner if isinstance(inner, str) else None
        if JOIN in value and isinstance(value[JOIN], list):
            parts = []
            for part in value[JOIN]:
                text = _text(part, hole)
                if text is None:
                    text = hole if hole is not None else _placeholder(part)
                parts.append(text)
            return "".join(parts)
    return None


def _placeholder(value: Any) -> str:
    if isinstance(value, Mapping) and FROM in value:
        path = value.get("path")
        if isinstance(path, list):
            path = ".".join(str(segment) for segment in path)
        return "{" + str(value[FROM]) + (f".{path}" if path else "") + "}"
    return "{?}"


def call_host(url: Any) -> str | None:
    """The host of a URL known now, or whose known text names it; else ``None``."""
    text = _text(url, _HOLE)
    if text is None:
        return None
    try:
        parts = urlsplit(text)
        host = parts.hostname
    except ValueError:
        return None
    if not host or _HOLE in parts.netloc:
        return None
    return host


def _command(argv: Any) -> str:
    if not isinstance(argv, list):
        return _placeholder(argv)
    words = [_text(word) for word in argv]
    return shlex.join(word if word is not None else _placeholder(arg)
                      for word, arg in zip(words, argv, strict=True))  # fmt: skip


def _listed(known: Iterable[str], unknown: tuple[str, ...]) -> str:
    items = list(known)
    if unknown:
        items.append(f"decided at run time by {len(unknown)} step(s) ({', '.join(unknown)})")
    return ", ".join(items) or "none"


def seconds_text(seconds: float) -> str:
    """``40 s``, ``2 min 5 s``, ``1 h 3 min``."""
    whole = round(seconds)
    if whole < 60:
        return f"{seconds:g} s" if seconds < 10 else f"{whole} s"
    minutes, secs = divmod(whole, 60)
    if minutes < 60:
        return f"{minutes} min" + (f" {secs} s" if secs else "")
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h" + (f" {minutes} min" if minutes else "")


def duration_text(duration: Duration) -> str:
    """``at least 40 s (3 steps have no duration estimate)``, ``about 2 min``."""
    if duration.complete:
        return f"about {seconds_text(duration.seconds)}"
    count = len(duration.unknown)
    steps = "1 step has" if count == 1 else f"{count} steps have"
    if not duration.seconds:
        return f"unknown ({steps} no duration estimate)"
    return f"at least {seconds_text(duration.seconds)} ({steps} no duration estimate)"


def compare_impact(old: Impact, new: Impact) -> tuple[str, ...]:
    """What ``new`` touches, asks, costs or takes that ``old`` did not, and the reverse,
    one sentence per change ("adds host 'api.example.com'", "adds 40 s to the estimated
    duration (12 s → 52 s)"); empty when the impact is the same."""
    out: list[str] = []
    for label, before, after in (
        ("host", old.hosts, new.hosts),
        ("scope", old.scopes, new.scopes),
        ("file written", old.files_written, new.files_written),
        ("command", old.commands, new.commands),
        ("MCP server", [u.server for u in old.mcp], [u.server for u in new.mcp]),
        (
            "MCP tool",
            [t for u in old.mcp for t in u.tools],
            [t for u in new.mcp for t in u.tools],
        ),
        ("approval pause at step", [p.step for p in old.pauses], [p.step for p in new.pauses]),
        ("review after milestone", old.reviews, new.reviews),
    ):
        added = [item for item in after if item not in set(before)]
        dropped = [item for item in before if item not in set(after)]
        if added:
            out.append(f"adds {_plural(label, added)} {', '.join(map(repr, added))}")
        if dropped:
            out.append(f"drops {_plural(label, dropped)} {', '.join(map(repr, dropped))}")
    if len(new.hosts_unknown) != len(old.hosts_unknown):
        out.append(
            f"steps whose host is decided at run time: {len(old.hosts_unknown)} → "
            f"{len(new.hosts_unknown)}"
        )
    old_effects, new_effects = dict(old.side_effects), dict(new.side_effects)
    for effect in SIDE_EFFECTS:
        before_n, after_n = old_effects.get(effect, 0), new_effects.get(effect, 0)
        if before_n != after_n:
            steps = "steps without side effects" if effect == "none" else f"{effect} steps"
            out.append(f"{steps}: {before_n} → {after_n}")
    if new.tokens != old.tokens:
        out.append(f"estimated tokens: {old.tokens} → {new.tokens}")
    if not math.isclose(new.cost, old.cost, abs_tol=1e-9):
        out.append(f"estimated cost: {old.cost:g} → {new.cost:g}")
    delta = new.duration.seconds - old.duration.seconds
    if abs(delta) >= 0.001:
        verb = "adds" if delta > 0 else "takes"
        out.append(
            f"{verb} {seconds_text(abs(delta))} {'to' if delta > 0 else 'off'} the estimated "
            f"duration ({seconds_text(old.duration.seconds)} → "
            f"{seconds_text(new.duration.seconds)})"
        )
    if len(new.duration.unknown) != len(old.duration.unknown):
        out.append(
            f"steps without a duration estimate: {len(old.duration.unknown)} → "
            f"{len(new.duration.unknown)}"
        )
    return tuple(out)


_PLURALS = {
    "file written": "files written",
    "approval pause at step": "approval pauses at steps",
    "review after milestone": "reviews after milestones",
}


def _plural(label: str, items: list[str]) -> str:
    return label if len(items) == 1 else _PLURALS.get(label, f"{label}s")
