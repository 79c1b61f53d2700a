"""What a tool is, as far as compiling and authorising a plan goes."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

__all__ = [
    "FORCED_APPROVAL",
    "HARMLESS",
    "RISKS",
    "SIDE_EFFECTS",
    "WRITE_CLASSES",
    "CallRefusal",
    "Risk",
    "SideEffect",
    "ToolSpec",
]

# The side-effect classes (SPEC sections 3 and 5), from the least to the most reaching:
# the one list every module reads, as the type and as values.
SideEffect = Literal["none", "read", "write", "external", "delete", "payment", "production"]
Risk = Literal["low", "medium", "high"]
SIDE_EFFECTS: tuple[SideEffect, ...] = get_args(SideEffect)
RISKS: tuple[Risk, ...] = get_args(Risk)
# Calls that change nothing: safe to repeat, and all a read-only replan may add.
HARMLESS: frozenset[SideEffect] = frozenset({"none", "read"})
# Calls that change something: each is previewed before it runs (SPEC section 5).
WRITE_CLASSES: frozenset[SideEffect] = frozenset(SIDE_EFFECTS) - HARMLESS
# Seed 003 section 9: outbound, delete, payment and production changes always need a
# person; a policy may add approval requirements but never remove these.
FORCED_APPROVAL: frozenset[SideEffect] = frozenset({"external", "delete", "payment", "production"})


@dataclass(frozen=True)
class CallRefusal:
    """Why a tool's runner will refuse a call, known before it runs: a stable ``code``
    (the runner's own, such as ``host_not_allowed``), the ``reason``, and a ``hint``
    saying what to change."""

    code: str
    reason: str
    hint: str = ""

    def to_data(self) -> dict[str, str]:
        return {"code": self.code, "reason": self.reason, "hint": self.hint}

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> CallRefusal:
        return cls(str(data["code"]), str(data["reason"]), str(data.get("hint", "")))


@dataclass(frozen=True)
class ToolSpec:
    """A tool's contract: its arguments' JSON Schema, permission scope and side effect.

    ``side_effect_of`` refines the side effect for concrete arguments (an HTTP GET only
    reads); without it every call has ``side_effect``. ``idempotent`` says whether a call
    may be repeated safely, which is what allows automatic retries. ``output_schema``
    declares the output's shape (JSON Schema), so the compiler can check what later steps
    take from it (``forge.plan.references``); ``echoes_args`` says the output is the
    call's own arguments (``echo``). Without either, a reference into the output is
    checked when it runs.

    ``refusal_of`` says why the deployment's runner will refuse a call with these
    arguments (``http_request``: a host off the allow list; ``forge.tools.hosts``), or
    ``None``; the toolbox sets it with the runner's own rule. The compiler reports such a
    call, and an agent's is refused when it is bound. Without it nothing is refused
    ahead: the registry describes the tools, not one deployment's reach.
    """

    name: str
    description: str
    args_schema: Mapping[str, Any]
    permission_scope: str
    side_effect: SideEffect = "none"
    idempotent: bool = True
    risk: Risk = "low"
    default_timeout_s: float = 60.0
    side_effect_of: Callable[[Mapping[str, Any]], SideEffect] | None = field(
        default=None, compare=False, repr=False
    )
    source: str = "builtin"
    output_schema: Mapping[str, Any] | None = field(default=None, repr=False)
    echoes_args: bool = False
    refusal_of: Callable[[Mapping[str, Any]], CallRefusal | None] | None = field(
        default=None, compare=False, repr=False
    )

    def effective_side_effect(self, args: Mapping[str, Any]) -> SideEffect:
        return self.side_effect_of(args) if self.side_effect_of else self.side_effect

    def refusal(self, args: Mapping[str, Any]) -> CallRefusal | None:
        """Why the runner will refuse this call (``refusal_of``), or ``None``."""
        return self.refusal_of(args) if self.refusal_of else None

    @property
    def repeatable(self) -> bool:
        """Whether running it twice is harmless: no side effect, a read, or idempotent."""
        return self.side_effect in HARMLESS or self.idempotent
