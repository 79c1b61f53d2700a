"""What a replan is told (SPEC section 3's replan input), from a run's graph and state.

One function for every host: the CLI's ``LocalRun`` and the web (runs.services) build a
replan's input here, so a planner, a person in the editor and the compiler's
``repeats_side_effect`` check all see the same side effects already performed.
"""

from __future__ import annotations

from forge.compiler import ExecutableGraph, PerformedSideEffect
from forge.planners import Observation
from forge.runtime.state import RunState

__all__ = ["performed_side_effects", "replan_observation"]


def performed_side_effects(
    graph: ExecutableGraph, state: RunState
) -> tuple[PerformedSideEffect, ...]:
    """Non-repeatable calls that succeeded (or may have: a step waiting for
    reconciliation): a replan must not silently do them again."""
    return tuple(
        PerformedSideEffect(node.binding.tool.name, step_id, node.binding.args_hash)
        for step_id, node in graph.nodes.items()
        if node.binding is not None
        and not node.binding.repeatable
        and state.steps.get(step_id) is not None
        and state.steps[step_id].status in ("succeeded", "needs_reconciliation")
    )


def replan_observation(graph: ExecutableGraph, state: RunState) -> Observation:
    """The replan input of a run in ``needs_replan``: the current version, the failed
    step with its error or contract verdict, the completed steps' outputs and the side
    effects already performed."""
    failed = state.failed_step
    failed_state = state.steps.get(failed) if failed else None
    return Observation(
        current=graph.document,
        current_version=state.plan_version,
        failed_step=failed,
        error=failed_state.error if failed_state else "",
        verdict=failed_state.verdict if failed_state else None,
        completed={
            sid: step.output for sid, step in state.steps.items() if step.status == "succeeded"
        },
        performed_side_effects=performed_side_effects(graph, state),
    )
