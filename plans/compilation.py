"""The deployment's compiler, and what a stored version compiles to now.

``compiler()`` is the one ``GraphCompiler`` of this process: the tool registry of
``forge.toolbox.build_toolbox(python_tools=True)`` (built-ins and installed Python
tools), built once, and the policy of the file named by the ``FORGE_POLICY`` setting
(YAML or JSON, ``forge.tools.Policy.from_data``'s shape), or ``DEFAULT_POLICY`` when it
is empty. Both are read once per process and policy path: a changed policy file takes
effect on restart. Plans compiles versions with it and runs must compile with the same
one, so that what was approved is what runs.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from forge.compiler import CompileResult, ExecutableGraph, GraphCompiler, PerformedSideEffect
from forge.plan import ImportLimits, PlanDocument, from_data
from forge.tools import DEFAULT_POLICY, Policy, PolicyEngine, PolicyError, ToolRegistry
from plans.errors import VersionHasErrors, VersionNotApproved

if TYPE_CHECKING:
    from plans.models import PlanVersion

__all__ = [
    "compile_document",
    "compile_version",
    "compiler",
    "performed_side_effects",
    "policy",
    "registry",
    "runnable_graph",
    "stored_document",
]

# Stored documents passed the import limits of their day; reading them back must not
# fail because a setting has since been lowered.
_STORED = ImportLimits(max_bytes=sys.maxsize, max_steps=sys.maxsize)


@functools.cache
def registry() -> ToolRegistry:
    """The tools plans are compiled against: built-ins, then installed Python tools."""
    from forge.toolbox import build_toolbox  # imports the runners: only when first needed

    return build_toolbox(python_tools=True).registry


def policy() -> Policy:
    """The policy of ``settings.FORGE_POLICY`` (``DEFAULT_POLICY`` when empty)."""
    return _policy_at(str(getattr(settings, "FORGE_POLICY", "") or ""))


def compiler() -> GraphCompiler:
    """This deployment's ``GraphCompiler`` (cached per registry and policy path)."""
    return _compiler_for(str(getattr(settings, "FORGE_POLICY", "") or ""))


@functools.lru_cache(maxsize=8)
def _compiler_for(policy_path: str) -> GraphCompiler:
    return GraphCompiler(registry(), PolicyEngine(_policy_at(policy_path)))


@functools.lru_cache(maxsize=8)
def _policy_at(path: str) -> Policy:
    if not path:
        return DEFAULT_POLICY
    try:
        return Policy.from_file(Path(path))
    except PolicyError as exc:
        raise ImproperlyConfigured(f"FORGE_POLICY: {exc}") from None


def stored_document(version: PlanVersion) -> PlanDocument:
    """The ``PlanDocument`` a version stores."""
    return from_data(version.document, _STORED)


def performed_side_effects(version: PlanVersion) -> tuple[PerformedSideEffect, ...]:
    """The side effects already performed by runs of the version's ancestors."""
    return tuple(PerformedSideEffect.from_data(item) for item in version.performed_side_effects)


def compile_document(
    document: PlanDocument, side_effects: Iterable[PerformedSideEffect] = ()
) -> CompileResult:
    return compiler().compile(document, side_effects)


def compile_version(version: PlanVersion) -> CompileResult:
    """Compile a stored version now, with its performed side effects."""
    return compile_document(stored_document(version), performed_side_effects(version))


def runnable_graph(version: PlanVersion) -> ExecutableGraph:
    """The graph to run ``version`` with: it must be approved and compile now.

    Raises ``VersionNotApproved`` (409 ``not_approved``) unless the version's status is
    approved, and ``VersionHasErrors`` (409 ``has_errors``, with the error diagnostics)
    when it does not compile with today's tools and policy, even if it did when stored.
    """
    from plans.models import VersionStatus

    if version.has_errors:
        raise VersionHasErrors(
            f"version {version.number} has compile errors and cannot be run",
            diagnostics=[d for d in version.diagnostics if d.get("severity") == "error"],
        )
    if version.status != VersionStatus.APPROVED:
        raise VersionNotApproved(
            f"version {version.number} is {version.status}; only an approved version can be run"
        )
    result = compile_version(version)
    if result.graph is None:
        raise VersionHasErrors(
            f"version {version.number} no longer compiles with this deployment's tools and policy",
            diagnostics=[d.to_data() for d in result.errors],
        )
    return result.graph
