"""Tools as the compiler and the executor see them: specs, the registry and the policy."""

from forge.tools.builtins import BUILTIN_TOOLS, builtin_registry, builtin_tools
from forge.tools.hosts import HostAllowList
from forge.tools.policy import DEFAULT_POLICY, Policy, PolicyDecision, PolicyEngine, PolicyError
from forge.tools.registry import ArgumentsInvalid, ToolRegistry, UnknownTool
from forge.tools.spec import (
    FORCED_APPROVAL,
    HARMLESS,
    RISKS,
    SIDE_EFFECTS,
    WRITE_CLASSES,
    CallRefusal,
    Risk,
    SideEffect,
    ToolSpec,
)

__all__ = [
    "BUILTIN_TOOLS",
    "DEFAULT_POLICY",
    "FORCED_APPROVAL",
    "HARMLESS",
    "RISKS",
    "SIDE_EFFECTS",
    "WRITE_CLASSES",
    "ArgumentsInvalid",
    "CallRefusal",
    "HostAllowList",
    "Policy",
    "PolicyDecision",
    "PolicyEngine",
    "PolicyError",
    "Risk",
    "SideEffect",
    "ToolRegistry",
    "ToolSpec",
    "UnknownTool",
    "builtin_registry",
    "builtin_tools",
]
