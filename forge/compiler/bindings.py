"""Tool resolution: each step's tools looked up, authorised, and its call bound.

A step with ``tool`` is a concrete call and gets a ``ToolBinding``; a ``tools_allowed``
beside it only constrains it. A step with ``tools_allowed`` alone is an agent step: it gets
no binding, because its calls are chosen at run time and each is bound and checked by the
ToolExecutor then. ``args`` on an agent step are refused (``invalid_args``) rather than
ignored, so nothing an author wrote is silently dropped. Permissions come from the
``PolicyEngine`` alone; the plan's ``requires_approval_before`` reaches it as extra
approval scopes, which can add approval reasons but never remove one. A step repeats a
side effect when its tool, with an effect that writes or reaches outside and is not
idempotent, has the same argument hash as a performed one; the step id is not compared,
since renaming a step does not make sending the same e-mail twice harmless. Arguments are
serialised to canonical JSON at compile time: what is not JSON is refused, and the hash
that approvals bind to is fixed. Validation is cached per tool and canonical arguments,
since plans often repeat a call. A call the tool's runner will refuse (``ToolSpec.refusal``:
an ``http_request`` to a host off the deployment's allow list) is an error with the
runner's code, ``host_not_allowed``, and a hint naming what to change.

An unknown tool's diagnostic hints the registered tools closest to its name ("did you
mean"), since most are a slip of the keyboard or a tool's older name.

``bind_call`` applies the same rules to one call an agent proposes at run time, so a
call chosen by a model is bound exactly as one written in the plan.

Arguments that take values from earlier steps (``$from``, ``$join``, ``$literal``:
``forge.plan.references``) are bound as written, hashed as written, and checked against
the schema later, by ``forge.compiler.references``, once every step's tool is known. Their
side effect is decided on the arguments with each such value unknown (``None``), or is
the tool's declared one if that cannot be decided; at run time a resolved call may only
keep it or lower it (``forge.runtime.calls``).
"""

from __future__ import annotations

import difflib
import hashlib
from collections.abc import Iterable, Mapping
from typing import Any

from forge.compiler.diagnostics import Diagnostic
from forge.compiler.graph import PerformedSideEffect, ToolBinding
from forge.errors import ForgeError
from forge.plan import PlanDocument, Step, canonical_json
from forge.plan.references import FROM, JOIN, LITERAL, Reference, Template, scan, substitute
from forge.tools import (
    ArgumentsInvalid,
    CallRefusal,
    PolicyDecision,
    PolicyEngine,
    SideEffect,
    ToolRegistry,
    ToolSpec,
)

__all__ = ["BindingResolver", "CallRefused", "Resolved", "bind_call", "templated_side_effect"]

# An operator key as canonical JSON writes it: arguments without one skip the scan.
_OPERATOR_KEYS = tuple(f'"{key}":' for key in (FROM, JOIN, LITERAL))

Resolved = tuple[ToolBinding | None, tuple[ToolSpec, ...], tuple[str, ...]]
# A valid call's side effect, the policy's decision on it, and why its runner will refuse
# it (``ToolSpec.refusal``), if it will.
_Call = tuple[SideEffect, PolicyDecision, CallRefusal | None]


class BindingResolver:
    """Resolves the steps of one document; it caches policy decisions per tool and
    validation per distinct (tool, arguments), so build one per compile."""

    def __init__(
        self,
        registry: ToolRegistry,
        policy: PolicyEngine,
        document: PlanDocument,
        performed: Iterable[PerformedSideEffect],
    ) -> None:
        self._registry = registry
        self._policy = policy
        self._scopes = document.requires_approval_before
        # tool name -> its spec and the policy's decision, or None when not registered
        self._tools: dict[str, tuple[ToolSpec, PolicyDecision] | None] = {}
        # unknown tool name -> the "did you mean" hint of its diagnostic ("" for none)
        self._hints: dict[str, str] = {}
        # (tool name, a call's side effect) -> the decision for calls with that effect
        self._calls: dict[tuple[str, str], PolicyDecision] = {}
        # tool name -> canonical args JSON -> (args hash, validation error or "", and
        # without an error the call's side effect and the policy's decision on it)
        self._checked: dict[str, dict[str, tuple[str, str, _Call | None]]] = {}
        # Steps whose arguments use operators, with their tool and what scanning found:
        # forge.compiler.references checks them once every step's tool is known.
        self.templates: list[tuple[Step, ToolSpec, Template]] = []
        # Each bound step's arguments as canonical JSON, by the arguments' id: the graph's
        # content hash takes them from here (``ExecutableGraph.canonical_args``).
        self.canonical_args: dict[int, str] = {}
        self._performed: dict[tuple[str, str], list[str]] = {}
        for effect in performed:
            self._performed.setdefault((effect.tool, effect.args_hash), []).append(effect.step_id)

    def resolve(self, step: Step, out: list[Diagnostic]) -> Resolved:
        """The step's binding (``None`` for an agent step or on error), its allowed tools
        and its approval reasons; problems are appended to ``out``. A tool the policy
        denies still has its arguments checked, so one compile reports both."""
        allowed = self._allowed(step, out) if step.tools_allowed else ()
        if step.tool is None:
            return self._agent(step, allowed, out)
        # A tool that tools_allowed lists has been looked up, and reported, already.
        listed = step.tool in step.tools_allowed
        if step.tools_allowed and not listed:
            message = (
                f"step {step.id!r} calls {step.tool!r}, which its tools_allowed "
                f"({', '.join(step.tools_allowed)}) does not include"
            )
            out.append(Diagnostic.of("unauthorized_tool", message, (step.id,)))
        spec = self._lookup(step, step.tool, "uses", [] if listed else out)
        binding = None if spec is None else self._bind(step, spec, out)
        if binding is None:
            return None, allowed, ()
        if self._performed and not binding.repeatable:
            self._repeats(step, binding, out)
        if binding.approval_reasons:
            self._approval(step, binding.approval_reasons, out)
        return binding, allowed, binding.approval_reasons

    def _allowed(self, step: Step, out: list[Diagnostic]) -> tuple[ToolSpec, ...]:
        names = dict.fromkeys(step.tools_allowed)
        found = (self._lookup(step, name, "allows", out) for name in names)
        return tuple(spec for spec in found if spec is not None)

    def _agent(self, step: Step, allowed: tuple[ToolSpec, ...], out: list[Diagnostic]) -> Resolved:
        if not step.tools_allowed:
            out.append(_without_tools(step.id))
        if step.args:
            message = (
                f"step {step.id!r} gives args but no tool; an agent step chooses its own "
                "arguments, so name the tool or describe the input instead"
            )
            out.append(Diagnostic.of("invalid_args", message, (step.id,)))
        every = (reason for spec in allowed for reason in self._decision(spec).approval_reasons)
        reasons = tuple(dict.fromkeys(every))
        if reasons:
            self._approval(step, reasons, out)
        return None, allowed, reasons

    def _lookup(self, step: Step, name: str, verb: str, out: list[Diagnostic]) -> ToolSpec | None:
        """The registered tool ``name``, reporting it when unknown or not authorised."""
        if name not in self._tools:
            spec = self._registry.get(name) if name in self._registry else None
            self._tools[name] = (
                None if spec is None else (spec, self._policy.decide(spec, self._scopes))
            )
        found = self._tools[name]
        if found is None:
            down = self._registry.unavailable_reason(name)
            if down is not None:
                source = name.partition(".")[0]
                message = (
                    f"step {step.id!r} {verb} tool {name!r} of MCP server {source!r}, "
                    f"which is not available: {down}"
                )
                out.append(Diagnostic.of("tool_unavailable", message, (step.id,)))
                return None
            message = f"step {step.id!r} {verb} unknown tool {name!r}"
            hint = self._hints.get(name)
            if hint is None:
                hint = self._hints[name] = did_you_mean(name, self._registry)
            out.append(Diagnostic.of("unknown_tool", message, (step.id,), hint=hint))
            return None
        spec, decision = found
        if not decision.allowed:
            message = f"step {step.id!r}: {decision.reason}"
            out.append(Diagnostic.of("unauthorized_tool", message, (step.id,)))
        return spec

    def _decision(self, spec: ToolSpec) -> PolicyDecision:
        """The policy's decision on a tool ``_lookup`` has already found."""
        found = self._tools[spec.name]
        assert found is not None
        return found[1]

    def _bind(self, step: Step, spec: ToolSpec, out: list[Diagnostic]) -> ToolBinding | None:
        args = step.args
        try:
            args_json = canonical_json(args)
        except (TypeError, ValueError) as exc:
            out.append(
                Diagnostic.of(
                    "invalid_args", f"step {step.id!r}: arguments are not JSON: {exc}", (step.id,)
                )
            )
            return None
        self.canonical_args[id(args)] = args_json
        # Every operator key starts with '"$': most arguments have none, one search says so.
        if '"$' in args_json and any(key in args_json for key in _OPERATOR_KEYS):
            template = scan(args)
            if template.operators:
                return self._bind_template(step, spec, args_json, template, out)
        known = self._checked.get(spec.name)
        if known is None:
            known = self._checked[spec.name] = {}
        checked = known.get(args_json)
        if checked is None:
            try:
                self._registry.validate_args(spec.name, args)
                error = ""
            except ArgumentsInvalid as exc:
                error = exc.message
            # the effect is decided on the arguments, so it is cached with them
            call = None
            if not error:
                effect = spec.effective_side_effect(args)
                call = (effect, self._effect_decision(spec, effect), spec.refusal(args))
            checked = known[args_json] = (
                hashlib.sha256(args_json.encode()).hexdigest(),
                error,
                call,
            )
        args_hash, error, call = checked
        if call is None:
            out.append(Diagnostic.of("invalid_args", f"step {step.id!r}: {error}", (step.id,)))
            return None
        effect, decision, refusal = call
        if refusal is not None:
            out.append(_refused(step.id, spec, refusal))
        timeout_s = spec.default_timeout_s if step.timeout_s is None else step.timeout_s
        return _binding(spec, args, args_hash, timeout_s, effect, decision)

    def _effect_decision(self, spec: ToolSpec, effect: SideEffect) -> PolicyDecision:
        """The policy's decision on a call of ``spec`` with side effect ``effect``: the
        tool's own, or for an effect other than its declared one (an HTTP GET only
        reads), the decision for what the call does."""
        if effect == spec.side_effect:
            return self._decision(spec)
        key = (spec.name, effect)
        if key not in self._calls:
            self._calls[key] = self._policy.decide(spec, self._scopes, effect)
        return self._calls[key]

    def _bind_template(
        self, step: Step, spec: ToolSpec, args_json: str, template: Template, out: list[Diagnostic]
    ) -> ToolBinding:
        """A binding of arguments that name earlier outputs: hashed as written, checked
        against the schema by ``forge.compiler.references``. The arguments written in
        full (a URL beside a body taken from an earlier step) are judged by the runner's
        rule now; the others when the call is resolved, by its preview."""
        self.templates.append((step, spec, template))
        if spec.refusal_of is not None and not template.problems:
            taken = {reference.at[0] for reference in template.references}
            written = {key: value for key, value in step.args.items() if key not in taken}
            refusal = spec.refusal(substitute(written, lambda reference: None))
            if refusal is not None:
                out.append(_refused(step.id, spec, refusal))
        timeout_s = spec.default_timeout_s if step.timeout_s is None else step.timeout_s
        effect = spec.side_effect if template.problems else templated_side_effect(spec, step.args)
        decision = self._effect_decision(spec, effect)
        args_hash = hashlib.sha256(args_json.encode()).hexdigest()
        return _binding(
            spec, step.args, args_hash, timeout_s, effect, decision, template.references
        )

    def _repeats(self, step: Step, binding: ToolBinding, out: list[Diagnostic]) -> None:
        earlier = self._performed.get((binding.tool.name, binding.args_hash))
        if earlier:
            out.append(
                Diagnostic.of(
                    "repeats_side_effect",
                    f"step {step.id!r} would repeat the {binding.side_effect} side effect of "
                    f"{binding.tool.name!r} with the same arguments, already performed by "
                    f"step {', '.join(map(repr, sorted(set(earlier))))}",
                    (step.id,),
                )
            )

    @staticmethod
    def _approval(step: Step, reasons: tuple[str, ...], out: list[Diagnostic]) -> None:
        message = f"step {step.id!r} will wait for approval: {'; '.join(reasons)}"
        out.append(Diagnostic.of("approval_required", message, (step.id,)))


class CallRefused(ForgeError, ValueError):
    """A run-time call that cannot be bound. ``code``: ``tool_not_allowed`` (not in the
    step's ``tools_allowed``), ``unknown_tool``, ``tool_unavailable`` (its MCP server is
    down), ``unauthorized_tool`` (the policy denies
    it), ``invalid_args`` (not JSON, or against the tool's schema) or the code of the
    runner's refusal (``host_not_allowed``)."""

    code = "call_refused"


def bind_call(
    registry: ToolRegistry,
    policy: PolicyEngine,
    tool_name: str,
    args: Mapping[str, Any],
    step: Step,
    plan_scopes: Iterable[str] = (),
    *,
    timeout_s: float | None = None,
) -> ToolBinding:
    """Bind one call an agent step proposes, by the compiler's rules: the tool must be in
    the step's ``tools_allowed`` (when it has any), registered and allowed by the policy,
    and the arguments JSON that satisfies its schema. ``plan_scopes`` (the plan's
    ``requires_approval_before``) add approval reasons as they do at compile time.
    ``timeout_s`` defaults to the step's, then the tool's. Raises ``CallRefused``."""
    if step.tools_allowed and tool_name not in step.tools_allowed:
        raise CallRefused(
            f"tool {tool_name!r} is not in step {step.id!r}'s tools_allowed "
            f"({', '.join(step.tools_allowed)})",
            code="tool_not_allowed",
        )
    if tool_name not in registry:
        down = registry.unavailable_reason(tool_name)
        if down is not None:
            message = f"tool {tool_name!r} is not available: {down}"
            raise CallRefused(message, code="tool_unavailable")
        raise CallRefused(f"unknown tool {tool_name!r}", code="unknown_tool")
    spec = registry.get(tool_name)
    effect = spec.effective_side_effect(args)
    decision = policy.decide(spec, plan_scopes, effect)
    if not decision.allowed:
        raise CallRefused(decision.reason, code="unauthorized_tool")
    try:
        args_json = canonical_json(args)
    except (TypeError, ValueError) as exc:
        raise CallRefused(f"arguments are not JSON: {exc}", code="invalid_args") from None
    try:
        registry.validate_args(spec.name, args)
    except ArgumentsInvalid as exc:
        raise CallRefused(exc.message, code="invalid_args") from None
    refusal = spec.refusal(args)
    if refusal is not None:
        raise CallRefused(f"{refusal.reason}; {refusal.hint}", code=refusal.code)
    if timeout_s is None:
        timeout_s = spec.default_timeout_s if step.timeout_s is None else step.timeout_s
    args_hash = hashlib.sha256(args_json.encode()).hexdigest()
    return _binding(spec, args, args_hash, timeout_s, effect, decision)


def templated_side_effect(spec: ToolSpec, args: Mapping[str, Any]) -> SideEffect:
    """The side effect of a call whose arguments hold operators, decided before their
    values are known: on the arguments with every value from an earlier step unknown
    (``None``; a ``$join`` is text), or the tool's declared effect when its
    ``side_effect_of`` cannot decide on those."""
    if spec.side_effect_of is None:
        return spec.side_effect

    def unknown(reference: Reference) -> Any:
        return "" if reference.part is not None else None

    try:
        return spec.side_effect_of(substitute(args, unknown))
    except Exception:  # a refinement that needs the real value: the declared class
        return spec.side_effect


def _binding(
    spec: ToolSpec,
    args: Mapping[str, Any],
    args_hash: str,
    timeout_s: float,
    side_effect: SideEffect,
    decision: PolicyDecision,
    references: tuple[Reference, ...] | None = None,
) -> ToolBinding:
    """A binding; with ``references`` (even none: a ``$literal`` alone) one still to be
    resolved."""
    return ToolBinding(
        spec,
        args,
        args_hash,
        timeout_s,
        side_effect,
        decision.approval_reasons,
        references or (),
        references is None,
    )


def did_you_mean(name: str, registry: ToolRegistry) -> str:
    """``did you mean `x`?`` naming the registered tools closest to ``name`` (a typo,
    another tool's old name), or ``""`` when none is close."""
    close = difflib.get_close_matches(name, [spec.name for spec in registry], n=3)
    if not close:
        return ""
    names = [f"`{candidate}`" for candidate in close]
    listed = names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"
    return f"did you mean {listed}?"


AGENT_TOOLS_HINT = (
    "List the tools it may call in tools_allowed (in the editor: tick them under "
    '"Tools allowed" in the step\'s panel), or name the one tool it calls in tool.'
)


def _refused(step_id: str, spec: ToolSpec, refusal: CallRefusal) -> Diagnostic:
    """A call the tool's runner will refuse (``ToolSpec.refusal``): always an error, so
    a version that cannot run is never approved."""
    message = f"step {step_id!r} calls {spec.name}, which will refuse it: {refusal.reason}"
    return Diagnostic(refusal.code, "error", message, (step_id,), (), refusal.hint)


def _without_tools(step_id: str) -> Diagnostic:
    """A step with neither ``tool`` nor ``tools_allowed``: an agent step that may call
    nothing yet (a new step in the editor, a node of an imported flowchart)."""
    message = f"step {step_id!r} is an agent step with no allowed tools yet"
    return Diagnostic.of("agent_without_tools", message, (step_id,), hint=AGENT_TOOLS_HINT)
