"""Who a run waits for (SPEC section 5): "a run that needs a person says so in
``blocked_reason``, naming the step and the role that can act".

A run can wait for three kinds of people's moves: an interrupted step to be reconciled
(an operator), a reached milestone to be reviewed and a step to be approved (an approver
who did not write the version); a waiting step whose call its runner will refuse cannot
be approved, only rejected (``refused``). ``waiting_reason`` words them, in that order,
in one sentence per kind; ``forge.runtime.state.apply_event`` sets it as the run's
``blocked_reason`` whenever the run is running or awaiting approval, so the rule lives
here alone and a rebuilt run says the same. The run page mirrors it word for word
(``static/forge/js/run/state.js``, checked against ``tests/fixtures/blocked_reasons.json``).
"""

from __future__ import annotations

import heapq
from collections.abc import Collection

__all__ = ["APPROVER", "NAMED", "OPERATOR", "waiting_reason"]

OPERATOR = "an operator"
APPROVER = "an approver who did not write this version"
# Ids named in a sentence; the rest are counted (a wide fan-out waiting for approval
# would otherwise make a reason as long as the plan).
NAMED = 5


def waiting_reason(
    approvals: Collection[str],
    reconciliations: Collection[str],
    reviews: Collection[str],
    refused: Collection[str] = (),
) -> str:
    """The run's ``blocked_reason`` while steps wait for approval (``approvals``), need
    reconciling (``reconciliations``), milestones wait for review (``reviews``) and
    waiting steps' calls will be refused (``refused``, not among ``approvals``); ""
    when nothing waits for a person."""
    parts = []
    if reconciliations:
        parts.append(
            _sentence("step", reconciliations, "needs", "need", f"reconciling by {OPERATOR}: ")
            + (
                "it may have performed its side effect"
                if len(reconciliations) == 1
                else "they may have performed their side effects"
            )
        )
    if reviews:
        parts.append(_sentence("milestone", reviews, "waits", "wait", f"for review by {APPROVER}"))
    if approvals:
        parts.append(_sentence("step", approvals, "waits", "wait", f"for approval by {APPROVER}"))
    if refused:
        parts.append(
            _sentence("step", refused, "cannot", "cannot", "be approved: ")
            + ("its call" if len(refused) == 1 else "their calls")
            + f" will be refused; {APPROVER} may reject "
            + ("it" if len(refused) == 1 else "them")
            + " to replan"
        )
    return "; ".join(parts)


def _sentence(noun: str, ids: Collection[str], one: str, many: str, rest: str) -> str:
    named = heapq.nsmallest(NAMED, ids) if len(ids) > NAMED else sorted(ids)
    listed = ", ".join(f"'{name}'" for name in named)
    if len(ids) > NAMED:
        listed += f" and {len(ids) - NAMED} more"
    if len(ids) == 1:
        return f"{noun} {listed} {one} {rest}"
    return f"{noun}s {listed} {many} {rest}"
