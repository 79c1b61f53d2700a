"""What a tool is, as far as compiling and authorising a plan goes."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = [
    "FORCED_APPROVAL",
    "RISKS",
    "SIDE_EFFECTS",
    "WRITE_CLASSES",
    "Risk",
    "SideEffect",
    "ToolSpec",
]

SideEffect = Literal["none", "read", "write", "external", "delete", "payment", "production"]
Risk = Literal["low", "medium", "high"]
SIDE_EFFECTS: tuple[SideEffect, ...] = (
    "none", "read", "write", "external", "delete", "payment", "production",
)  # fmt: skip
RISKS: tuple[Risk, ...] = ("low", "medium", "high")
# Calls that change something: each is previewed before it runs (SPEC section 5).
WRITE_CLASSES: frozenset[SideEffect] = frozenset(
    {"write", "external", "delete", "payment", "production"}
)
# Seed 003 section 9: outbound, delete, payment and production changes always need a
# person; a policy may add approval requirements but never remove these.
FORCED_APPROVAL: frozenset[SideEffect] = frozenset({"external", "delete", "payment", "production"})


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

    def effective_side_effect(self, args: Mapping[str, Any]) -> SideEffect:
        return self.side_effect_of(args) if self.side_effect_of else self.side_effect

    @property
    def repeatable(self) -> bool:
        """Whether running it twice is harmless: no side effect, a read, or idempotent."""
        return self.side_effect in ("none", "read") or self.idempotent
