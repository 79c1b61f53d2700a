"""Permissions come from policy, never from the plan: which tools a plan may use, and
which calls must wait for a person's approval.

Deny by default: a tool is allowed only when its permission scope has an allow list
naming it (or ``"*"``). A call waits for approval when the policy or the plan names its
scope (``mcp.<server>``: every tool of an MCP server) or the tool itself
(``<server>.<tool>``, or a built-in's name), when its tool is high risk (while
``approve_high_risk`` holds), and always when its side effect is one of
``FORCED_APPROVAL`` (external, delete, payment, production): no policy field can turn
that off. ``auto_approve_replans`` says whether a replan may
continue a run without a person (``forge.runtime.gate`` applies it).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from forge.errors import ForgeError
from forge.tools.spec import FORCED_APPROVAL, SideEffect, ToolSpec

__all__ = [
    "AUTO_APPROVE_REPLANS",
    "DEFAULT_POLICY",
    "Policy",
    "PolicyDecision",
    "PolicyEngine",
    "PolicyError",
]

# "never": every replanned version waits for a person; "read_only": a replan that drops
# no constraint and whose added or changed steps only read may continue (SPEC section 5).
AUTO_APPROVE_REPLANS = ("never", "read_only")


class PolicyError(ForgeError, ValueError):
    code = "invalid_policy"


@dataclass(frozen=True)
class Policy:
    """``allow`` maps a permission scope to the tool names allowed in it (``"*"``: all).
    ``require_approval`` lists scopes, or tool names, whose calls always wait for
    approval; high-risk tools wait too while ``approve_high_risk`` holds."""

    allow: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    require_approval: tuple[str, ...] = ()
    approve_high_risk: bool = True
    auto_approve_replans: str = "never"

    @classmethod
    def from_data(cls, data: object) -> Policy:
        if not isinstance(data, Mapping):
            raise PolicyError("a policy must be an object with 'allow' and 'require_approval'")
        unknown = set(data) - {
            "allow", "require_approval", "approve_high_risk", "auto_approve_replans",
        }  # fmt: skip
        if unknown:
            raise PolicyError(f"unknown policy field(s): {', '.join(sorted(map(str, unknown)))}")
        allow = data.get("allow") or {}
        if not isinstance(allow, Mapping) or not all(
            isinstance(names, list | tuple) and all(isinstance(n, str) for n in names)
            for names in allow.values()
        ):
            raise PolicyError("policy 'allow' must map each scope to a list of tool names")
        require = data.get("require_approval") or []
        if not isinstance(require, list | tuple) or not all(isinstance(s, str) for s in require):
            raise PolicyError("policy 'require_approval' must be a list of scopes or tool names")
        auto = data.get("auto_approve_replans", "never")
        if auto not in AUTO_APPROVE_REPLANS:
            raise PolicyError(
                "policy 'auto_approve_replans' must be one of "
                f"{', '.join(AUTO_APPROVE_REPLANS)}, not {auto!r}"
            )
        return cls(
            allow={str(scope): tuple(names) for scope, names in allow.items()},
            require_approval=tuple(require),
            approve_high_risk=bool(data.get("approve_high_risk", True)),
            auto_approve_replans=str(auto),
        )

    @classmethod
    def from_file(cls, path: Path) -> Policy:
        """A policy from a YAML or JSON file (``.json``: JSON; anything else: YAML, loaded
        safely). Raises ``PolicyError`` naming the file for anything unreadable."""
        import yaml  # only a policy file pays for its import

        try:
            text = path.read_text(encoding="utf-8")
            data = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
        except (OSError, UnicodeDecodeError, ValueError, yaml.YAMLError) as exc:
            raise PolicyError(f"cannot read policy {path}: {exc}") from None
        try:
            return cls.from_data(data)
        except PolicyError as exc:
            raise PolicyError(f"policy {path}: {exc}") from None

    @classmethod
    def allowing(cls, scopes: Iterable[str], require_approval: Iterable[str] = ()) -> Policy:
        """Every tool of each scope in ``scopes``."""
        return cls(allow=dict.fromkeys(scopes, ("*",)), require_approval=tuple(require_approval))


@dataclass(frozen=True)
class PolicyDecision:
    allowed: bool
    reason: str
    approval_reasons: tuple[str, ...] = ()

    @property
    def requires_approval(self) -> bool:
        return bool(self.approval_reasons)


class PolicyEngine:
    def __init__(self, policy: Policy) -> None:
        self.policy = policy

    def decide(
        self,
        tool: ToolSpec,
        plan_approval_scopes: Iterable[str] = (),
        side_effect: SideEffect | None = None,
    ) -> PolicyDecision:
        """Whether a plan may use ``tool``, and why a call of it must wait for approval.

        ``plan_approval_scopes`` (the plan's ``requires_approval_before``: scopes or
        tool names) can add approval reasons; nothing a plan says removes one the
        policy sets.
        ``side_effect`` is the call's own (an HTTP GET only reads); without it the tool's
        declared side effect counts, which is the most a call of it can do.
        """
        names = self.policy.allow.get(tool.permission_scope, ())
        if "*" not in names and tool.name not in names:
            return PolicyDecision(
                False, f"policy does not allow tool {tool.name!r} (scope {tool.permission_scope!r})"
            )
        reasons = []
        scope, name = tool.permission_scope, tool.name
        plan_named = set(plan_approval_scopes)
        if scope in self.policy.require_approval:
            reasons.append(f"policy requires approval for scope {scope!r}")
        if name != scope and name in self.policy.require_approval:
            reasons.append(f"policy requires approval for tool {name!r}")
        if scope in plan_named:
            reasons.append(f"plan requires approval before scope {scope!r}")
        if name != scope and name in plan_named:
            reasons.append(f"plan requires approval before tool {name!r}")
        if self.policy.approve_high_risk and tool.risk == "high":
            reasons.append(f"tool {tool.name!r} is high risk")
        effect = tool.side_effect if side_effect is None else side_effect
        if effect in FORCED_APPROVAL:
            reasons.append(f"{effect} side effects always need a person's approval")
        return PolicyDecision(True, "allowed", tuple(reasons))


DEFAULT_POLICY = Policy.allowing(
    ["compute", "file_read", "file_write", "shell", "http", "database_read"]
)
