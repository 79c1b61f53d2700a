"""The approval rules that match a step waiting for its approval (SPEC section 10), judged
as the gate will judge the next approval of it (``ApprovalGate.step_judgement``, which
``Scheduler.approve`` calls): the step's compiled node, the run's version author, and the
approvals kept as ``counted`` for exactly the call and preview the step shows now
(``runs.services.approve_step`` keeps them). The queue, the home page, the inbox and the
run page show and filter by this; nothing here decides or writes.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from forge.errors import ForgeError
from forge.rules import Approver, Judgement
from forge.runtime.events import EventType
from plans.gate import gate
from runs.engine import graph_for
from runs.models import RunEvent, StepApproval, StepRun

__all__ = ["step_judgement", "step_judgements"]

_Key = tuple[int, str, int]  # run id, step id, plan version


def step_judgement(step: StepRun) -> Judgement | None:
    """``step_judgements`` of one step."""
    return step_judgements([step]).get(step.pk)


def step_judgements(steps: Sequence[StepRun]) -> dict[int, Judgement | None]:
    """Each waiting step's judgement, by ``StepRun`` id: ``None`` for a step whose
    version no longer compiles here, or that is no longer in the graph (nothing to match
    rules against; the approval itself would be refused then). ``steps`` should come with
    ``run__version__author`` selected."""
    if not steps:
        return {}
    keys = {(s.run_id, s.step_id, s.plan_version) for s in steps}
    waits = _waits(keys)
    counted = _counted(keys)
    the_gate = gate()  # the rules in force, read once
    judgements: dict[int, Judgement | None] = {}
    for step in steps:
        key = (step.run_id, step.step_id, step.plan_version)
        version = step.run.version
        try:
            node = graph_for(version).nodes.get(step.step_id)
        except ForgeError:
            node = None
        if node is None:
            judgements[step.pk] = None
            continue
        call = waits.get(key, ("", ""))
        judgements[step.pk] = the_gate.step_judgement(
            node,
            author=version.author.get_username(),
            approvals=[approver for shown, approver in counted.get(key, []) if shown == call],
        )
    return judgements


def _waits(keys: Iterable[_Key]) -> dict[_Key, tuple[str, str]]:
    """The call (arguments hash, preview hash) each step's latest wait shows."""
    keys = set(keys)
    shown: dict[_Key, tuple[str, str]] = {}
    rows = RunEvent.objects.filter(
        run_id__in={key[0] for key in keys},
        step_id__in={key[1] for key in keys},
        event_type=EventType.STEP_AWAITING_APPROVAL,
    ).order_by("seq")
    for run_id, step_id, version, args_hash, facts in rows.values_list(
        "run_id", "step_id", "plan_version", "tool_args_hash", "facts"
    ):
        key = (run_id, step_id or "", version)
        if key in keys:  # the latest wait wins
            preview = facts.get("preview") if isinstance(facts, dict) else None
            hash_ = str(preview.get("hash", "")) if isinstance(preview, dict) else ""
            shown[key] = (args_hash, hash_)
    return shown


def _counted(keys: Iterable[_Key]) -> dict[_Key, list[tuple[tuple[str, str], Approver]]]:
    """The approvals kept for each step that were not enough on their own, with the call
    each was given for."""
    keys = set(keys)
    found: dict[_Key, list[tuple[tuple[str, str], Approver]]] = {}
    rows = (
        StepApproval.objects.filter(
            run_id__in={key[0] for key in keys},
            step_id__in={key[1] for key in keys},
            decision="counted",
        )
        .select_related("reviewer")
        .order_by("created_at", "pk")
    )
    for row in rows:
        key = (row.run_id, row.step_id, row.plan_version)
        if key in keys:
            approver = Approver(row.reviewer.get_username(), tuple(row.teams))
            found.setdefault(key, []).append(((row.args_hash, row.preview_hash), approver))
    return found
