"""Which steps of a run ran with weaker isolation than bubblewrap: the run page warns.

A step's execution records say what confined each attempt (``forge.runners``); a shell
step run with ``FORGE_SANDBOX=rlimits`` is recorded ``rlimits-only``. One query per
page view, on the ``(run, step_id)`` index.
"""

from __future__ import annotations

from runs.models import ExecutionRecord, Run

RLIMITS_ONLY = "rlimits-only"


def rlimits_only_steps(run: Run) -> list[str]:
    """The ids of the steps with an attempt that ran with resource limits only, sorted."""
    return sorted(
        ExecutionRecord.objects.filter(run=run, isolation=RLIMITS_ONLY)
        .values_list("step_id", flat=True)
        .distinct()
    )
