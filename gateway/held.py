"""Unbound calls through the gateway (SPEC section 11): read-only calls pass, every other
call is held for a person, forwarded once when approved, and its answer replayed.

``call_unbound`` binds the call by the compiler's rules (``forge.compiler.bind_call``:
an MCP tool of the catalogue, allowed to this deployment by the policy, arguments valid).
A call that only reads (``forge.gateway.held.must_hold``) is forwarded at once through
the deployment's ``ToolExecutor`` and audited. Any other call is recorded as a
``HeldCall`` (``gateway.call_held``) with the approval rules that match it, and answered
``approval_pending`` with its id; the MCP side waits up to
``FORGE_GATEWAY_HOLD_SECONDS`` for a decision before it answers so. The same call again
(same user, tool and arguments hash) attaches to the newest held call: still held, it is
``approval_pending`` (or ``expired`` past ``FORGE_GATEWAY_HOLD_TTL``); rejected, it is
``rejected`` with the comment; approved, this request takes it (``approved`` to
``forwarded`` by compare-and-swap, audited ``gateway.call_forwarded``) and forwards it,
with the approval token the approver's decision signed (bound to the call, its
arguments' hash and its preview), and stores the answer (``gateway.call_answered``);
answered, the stored answer is replayed and nothing is sent. A call forwarded and never
answered (the process died meanwhile) is never sent again: ``call_in_flight``.

Decisions (``approve``, ``reject``): a person other than the caller (the gate's
``refuse_self_decision``), with ``step.approve``, judged by the approval rules in force
(``ApprovalGate.call_judgement``; the caller never counts), the rules version recorded.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from accounts.permissions import ensure_permission
from accounts.teams import teams_of
from audit.services import record
from forge.compiler import CallRefused, ToolBinding, bind_call
from forge.gateway.binding import GatewayRefused, arguments_hash
from forge.gateway.catalogue import gateway_tools
from forge.gateway.held import GATEWAY_RUN, call_subject, held_step, must_hold
from forge.people import same_person
from forge.plan import Step
from forge.rules import Approver, Judgement, Subject
from forge.runners.base import RunContext
from forge.runtime import ApprovalToken, ToolResult
from forge.runtime.gate import refuse_self_decision
from forge.toolbox import ToolboxSnapshot
from forge.tools import HostAllowList, PolicyEngine
from gateway.models import HeldCall
from gateway.signals import call_decided, call_held, send_after_commit
from plans.compilation import policy, tools
from plans.gate import approval_signer, gate
from plans.rules import rules_in_force
from runs.execution import executor, take_pending_records

__all__ = [
    "HeldCallRefused",
    "approve",
    "call_unbound",
    "held_call_data",
    "held_judgement",
    "reject",
    "waiting_calls",
]

_STEP = Step(id="gateway", description="A call an agent made through Forge's gateway")


class HeldCallRefused(GatewayRefused):
    """A held call that cannot be answered now (``approval_pending``, ``rejected``,
    ``expired``, ``call_in_flight``) or decided (``call_decided``, ``rules_unsatisfied``);
    ``details`` go into the API's answer (``held_call``, ``hold_seconds``)."""

    code = "approval_pending"

    def __init__(self, message: str, *, code: str, details: Mapping[str, Any]) -> None:
        super().__init__(message, code=code)
        self.details = dict(details)


def _actor(user: Any) -> str:
    return str(user.get_username())


def _bind(snapshot: ToolboxSnapshot, tool: str, arguments: Mapping[str, Any]) -> ToolBinding:
    offered = {found.name for found in gateway_tools(snapshot)}
    if tool not in offered:
        down = snapshot.registry.unavailable_reason(tool)
        if down is not None:
            raise GatewayRefused(f"tool {tool!r} is not available: {down}", code="tool_unavailable")
        raise GatewayRefused(f"the gateway offers no tool {tool!r}", code="unknown_tool")
    try:
        return bind_call(snapshot.registry, PolicyEngine(policy()), tool, arguments, _STEP)
    except CallRefused as refused:
        raise GatewayRefused(refused.message, code=refused.code) from None


def _workspace() -> Path:
    path = Path(settings.FORGE_WORKSPACES) / GATEWAY_RUN
    path.mkdir(parents=True, exist_ok=True)
    return path


def _context(binding: ToolBinding, step_id: str) -> RunContext:
    return RunContext(GATEWAY_RUN, step_id, _workspace(), binding.timeout_s, attempt=1)


def _forward(binding: ToolBinding, step_id: str, token: ApprovalToken | None) -> ToolResult:
    """The call through the deployment's executor (schema, policy, preview, the approval
    token, timeout). Its execution record is dropped: an unbound call belongs to no run,
    and its ``HeldCall`` row and audit events are its record."""
    try:
        return executor().execute(binding, _context(binding, step_id), token=token)
    finally:
        take_pending_records()


def _answer(binding: ToolBinding, result: ToolResult) -> dict[str, Any]:
    return {
        "is_error": not result.succeeded,
        "structured": binding.tool.output_schema is not None,
        "output": result.output,
        "error": result.error,
        "error_code": result.error_code,
    }


def call_unbound(user: Any, tool: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
    """Forward a read at once, or hold, forward once or replay any other call; returns
    the answer's fields (``is_error``, ``structured``, ``output``, ``error``,
    ``error_code``, and ``held_call`` for a held one). Raises ``GatewayRefused``."""
    ensure_permission(user, "run.start")
    snapshot = tools()
    try:
        binding = _bind(snapshot, tool, arguments)
    except GatewayRefused as refused:
        facts = {"tool": tool, "args_hash": arguments_hash(arguments), "code": refused.code}
        record(
            _actor(user), "gateway.call_refused", "tool", tool, {**facts, "reason": refused.message}
        )
        raise
    payload = {"tool": tool, "args_hash": binding.args_hash, "side_effect": binding.side_effect}
    hints = getattr(snapshot.runners.get(tool), "annotations", None)
    open_world = (
        hints is not None and bool(hints.read_only_hint) and hints.open_world_hint is not False
    )
    hosts = HostAllowList.of(settings.FORGE_HTTP_ALLOWED_HOSTS)
    if not must_hold(binding, open_world=open_world, hosts=hosts):
        record(_actor(user), "gateway.call_forwarded", "tool", tool, payload)
        result = _forward(binding, f"read-{binding.args_hash[:16]}", None)
        record(
            _actor(user),
            "gateway.call_answered",
            "tool",
            tool,
            {**payload, "status": result.status},
        )
        return {**_answer(binding, result), "held_call": None}
    held = _attached(user, binding)
    if held.status == "answered":
        return {**dict(held.answer or {}), "held_call": held.pk}
    if held.status == "approved":
        taken = HeldCall.objects.filter(pk=held.pk, status="approved").update(
            status="forwarded", forwarded_at=timezone.now()
        )
        if taken == 1:
            return _forward_held(user, held, binding)
        held.refresh_from_db()
        if held.status == "answered":
            return {**dict(held.answer or {}), "held_call": held.pk}
    raise _unanswered(held)


def _attached(user: Any, binding: ToolBinding) -> HeldCall:
    """The newest held call of this user, tool and arguments hash (one past its time is
    expired first); a new one when there is none or it expired."""
    with transaction.atomic():
        held = (
            HeldCall.objects.select_for_update()
            .filter(user=user, tool=binding.tool.name, args_hash=binding.args_hash)
            .order_by("-created_at", "-id")
            .first()
        )
        if held is not None and held.status_at(timezone.now()) != held.status:
            held.status = "expired"
            held.save(update_fields=["status"])
            record(_actor(user), "gateway.call_expired", "gateway_call", held.pk, _facts(held))
            send_after_commit(call_decided, held.pk, _actor(user))
            return held
        if held is not None and held.status != "expired":
            return held
        return _hold(user, binding)


def _hold(user: Any, binding: ToolBinding) -> HeldCall:
    tool = binding.tool
    preview = executor().preview(binding, _context(binding, "held"))
    judgement = gate().call_judgement(call_subject(binding), caller=_actor(user), approvals=())
    runner = tools(refresh=False).runners.get(tool.name)
    hints = getattr(runner, "annotations", None)
    held = HeldCall.objects.create(
        user=user,
        server=tool.source.removeprefix("mcp:"),
        tool=tool.name,
        annotations={} if hints is None else hints.model_dump(by_alias=True, exclude_none=True),
        arguments=dict(binding.args),
        args_hash=binding.args_hash,
        side_effect=binding.side_effect,
        preview_text=preview.text,
        preview_hash=preview.hash,
        rules=[rule.to_data() for rule in judgement.rules],
        status="held",
        expires_at=timezone.now() + timedelta(seconds=settings.FORGE_GATEWAY_HOLD_TTL),
    )
    record(_actor(user), "gateway.call_held", "gateway_call", held.pk, _facts(held))
    send_after_commit(call_held, held.pk, _actor(user))
    return held


def _facts(held: HeldCall) -> dict[str, Any]:
    return {
        "server": held.server,
        "tool": held.tool,
        "args_hash": held.args_hash,
        "side_effect": held.side_effect,
        "rules": [rule["id"] for rule in held.rules],
    }


def _forward_held(user: Any, held: HeldCall, binding: ToolBinding) -> dict[str, Any]:
    """Forward the held call this request took (``forwarded``), store its answer."""
    record(_actor(user), "gateway.call_forwarded", "gateway_call", held.pk, _facts(held))
    assert held.decided_by is not None
    approver = _actor(held.decided_by)
    token = ApprovalToken(
        GATEWAY_RUN,
        held_step(held.pk),
        held.args_hash,
        approver,
        held.approval_signature,
        held.preview_hash,
    )
    result = _forward(binding, held_step(held.pk), token)
    answer = _answer(binding, result)
    HeldCall.objects.filter(pk=held.pk, status="forwarded").update(
        status="answered", answer=answer, answered_at=timezone.now()
    )
    record(
        _actor(user),
        "gateway.call_answered",
        "gateway_call",
        held.pk,
        {**_facts(held), "status": result.status, "error_code": result.error_code},
    )
    return {**answer, "held_call": held.pk}


def _unanswered(held: HeldCall) -> HeldCallRefused:
    details = {"held_call": held.pk, "hold_seconds": settings.FORGE_GATEWAY_HOLD_SECONDS}
    if held.status == "rejected":
        by = "" if held.decided_by is None else f" by {_actor(held.decided_by)}"
        comment = f": {held.comment}" if held.comment else ""
        return HeldCallRefused(
            f"held call {held.pk} was rejected{by}{comment}", code="rejected", details=details
        )
    if held.status == "expired":
        return HeldCallRefused(
            f"held call {held.pk} expired without a decision; call again to ask again",
            code="expired",
            details=details,
        )
    if held.status == "forwarded":
        return HeldCallRefused(
            f"held call {held.pk} was forwarded and its answer was never stored; it is "
            "never sent again (ask a Forge operator what happened)",
            code="call_in_flight",
            details=details,
        )
    return HeldCallRefused(
        f"held call {held.pk} ({held.tool}, {held.side_effect}) waits for a person's approval",
        code="approval_pending",
        details=details,
    )


def _decidable(held: HeldCall, user: Any) -> None:
    ensure_permission(user, "step.approve")
    refuse_self_decision(_actor(user), _actor(held.user), f"their own held call {held.pk}")
    # An expired call is only reported here: the refusal rolls the decision's transaction
    # back, and the agent's next repeat records the expiry (``_attached``).
    status = held.status_at(timezone.now())
    if status != "held":
        raise HeldCallRefused(
            f"held call {held.pk} is {status}, not waiting for a decision",
            code="call_decided",
            details={"held_call": held.pk},
        )


def approve(held_id: int, user: Any, comment: str = "") -> HeldCall:
    """A person's approval, counted with those given before it under the rules in force
    (the caller never counts): the call is approved once every matching rule is
    satisfied, else it keeps waiting with this approval counted. Refused ``self_approval``
    to the caller, ``already_approved`` to someone counted already, ``call_decided`` when
    it no longer waits."""
    with transaction.atomic():
        held = HeldCall.objects.select_for_update().select_related("user").get(pk=held_id)
        _decidable(held, user)
        version, _ = rules_in_force()
        name = _actor(user)
        given = [Approver(str(a["name"]), tuple(a.get("teams", ()))) for a in held.approvals]
        if any(same_person(name, earlier.name) for earlier in given):
            raise HeldCallRefused(
                f"{name} approved held call {held.pk} already: another person must",
                code="already_approved",
                details={"held_call": held.pk},
            )
        given.append(Approver(name, teams_of(user)))
        judgement = gate().call_judgement(
            _subject_of(held), caller=_actor(held.user), approvals=given
        )
        held.approvals = [{"name": a.name, "teams": list(a.teams)} for a in given]
        if not judgement.satisfied:
            # Counted; the call waits for the people the rules still ask for.
            held.save(update_fields=["approvals"])
            record(
                name,
                "gateway.call_approved",
                "gateway_call",
                held.pk,
                {**_facts(held), "rules_version": version, "comment": comment,
                 "lacking": list(judgement.lacking())},
            )  # fmt: skip
            # Counted: those asked whose help is no longer needed are told so.
            send_after_commit(call_decided, held.pk, name)
            return held
        token = approval_signer().issue(
            GATEWAY_RUN, held_step(held.pk), held.args_hash, name, held.preview_hash
        )
        held.status, held.decided_by, held.decided_at = "approved", user, timezone.now()
        held.comment, held.rules_version = comment, version
        held.approval_signature = token.signature
        held.save()
        record(
            name,
            "gateway.call_approved",
            "gateway_call",
            held.pk,
            {**_facts(held), "rules_version": version, "comment": comment},
        )
        send_after_commit(call_decided, held.pk, name)
    return held


def reject(held_id: int, user: Any, comment: str = "") -> HeldCall:
    """A person's rejection; the caller is answered ``rejected`` with ``comment``."""
    with transaction.atomic():
        held = HeldCall.objects.select_for_update().select_related("user").get(pk=held_id)
        _decidable(held, user)
        held.status, held.decided_by, held.decided_at = "rejected", user, timezone.now()
        held.comment = comment
        held.save()
        record(
            _actor(user), "gateway.call_rejected", "gateway_call", held.pk,
            {**_facts(held), "comment": comment},
        )  # fmt: skip
        send_after_commit(call_decided, held.pk, _actor(user))
    return held


def held_judgement(held: HeldCall) -> Judgement:
    """The rules that match ``held`` now, each with who counts toward it (the approvals
    given so far; the caller never counts): what the review queue offers and to whom."""
    given = [Approver(str(a["name"]), tuple(a.get("teams", ()))) for a in held.approvals]
    return gate().call_judgement(_subject_of(held), caller=_actor(held.user), approvals=given)


def waiting_calls(user: Any) -> list[HeldCall]:
    """The held calls ``user`` can bring closer to approval, oldest first: still within
    their time, asked by someone else, and an open rule ``user`` qualifies for and does
    not count toward yet."""
    name, teams = _actor(user), teams_of(user)
    waiting = (
        HeldCall.objects.filter(status="held", expires_at__gt=timezone.now())
        .exclude(user_id=user.pk)
        .select_related("user")
        .order_by("created_at", "id")
    )
    return [
        held for held in waiting if held_judgement(held).can_help(name, teams, _actor(held.user))
    ]


def _subject_of(held: HeldCall) -> Subject:
    """What the rules match a stored held call on (``call_subject``'s facts, as held)."""
    return Subject(
        side_effects=frozenset({held.side_effect}),
        tools=frozenset({held.tool}),
        servers=frozenset({held.server}),
        scopes=frozenset({f"mcp.{held.server}"}),
        steps=1,
    )


def held_call_data(held: HeldCall) -> dict[str, Any]:
    """A held call as the API answers it: server, tool, annotations, arguments, who asked
    and since when, its status and decision."""
    return {
        "id": held.pk,
        "status": held.status,
        "server": held.server,
        "tool": held.tool,
        "annotations": held.annotations,
        "arguments": held.arguments,
        "args_hash": held.args_hash,
        "side_effect": held.side_effect,
        "preview": held.preview_text,
        "rules": held.rules,
        "approvals": held.approvals,
        "asked_by": _actor(held.user),
        "created_at": held.created_at,
        "expires_at": held.expires_at,
        "decided_by": None if held.decided_by is None else _actor(held.decided_by),
        "decided_at": held.decided_at,
        "comment": held.comment,
        "rules_version": held.rules_version,
        "answered": held.status == "answered",
    }
