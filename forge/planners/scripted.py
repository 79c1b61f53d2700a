"""``ScriptedPlanner``: hands out prepared documents in order, for tests and demos."""

from __future__ import annotations

import json
from collections.abc import Iterable

from forge.errors import ForgeError
from forge.plan import PlanDocument, to_data
from forge.planners.port import Observation, StructuredPlan
from forge.planners.prompt import planner_request

__all__ = ["PlannerExhausted", "ScriptedPlanner"]


class PlannerExhausted(ForgeError, LookupError):
    code = "planner_exhausted"


class ScriptedPlanner:
    def __init__(self, documents: Iterable[PlanDocument], name: str = "scripted") -> None:
        self._documents = list(documents)
        self._next = 0
        self.name = name
        self.observations: list[Observation] = []

    def plan(self, task: str, observation: Observation) -> StructuredPlan:
        self.observations.append(observation)
        if self._next >= len(self._documents):
            raise PlannerExhausted(
                f"the scripted planner has no plan left after {len(self._documents)}"
            )
        document = self._documents[self._next]
        self._next += 1
        reason = (
            f"step {observation.failed_step!r} failed: {observation.error}"
            if observation.failed_step
            else f"plan for: {task}"
        )
        return StructuredPlan(
            document,
            observation.current_version,
            reason,
            self.name,
            told=planner_request(task, observation, 8000),
            answered=json.dumps(to_data(document), ensure_ascii=False),
        )
