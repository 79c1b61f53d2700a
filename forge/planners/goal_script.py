"""``GoalScriptPlanner``: a planner without a model that answers any goal from a script,
for demos (``make run``'s ``FORGE_PLANNER``, examples/demo/planner.yaml).

A script (YAML or JSON) holds ``answers``, each with an ``example`` goal it knows (shown
to people), the ``words`` it answers to, a ``rationale`` and its ``plans``; and an
optional ``otherwise`` (the same without ``example`` and ``words``) for any other goal.
A goal gets the answer with most of its words at the start of the goal's words (case
aside; the first listed wins a tie), else ``otherwise``. A refused answer is followed by
the entry's next plan, then its last again: a script can show the retry loop, and never
runs out. The plan's goal becomes the person's goal. ``think_seconds`` makes each answer
take that long, as a model's would, so a person sees the progress of the work.

A script answers new plans only: a replan (``replan: auto``) is refused with
``planner_exhausted``, and the run waits for a person.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

from forge.errors import ForgeError, PlanDocumentError
from forge.plan import DEFAULT_LIMITS, ImportLimits, PlanDocument, from_data, to_data
from forge.planners.port import Observation, StructuredPlan
from forge.planners.prompt import planner_request
from forge.planners.scripted import PlannerExhausted

__all__ = ["GoalScriptPlanner", "PlannerScriptError", "ScriptAnswer", "is_goal_script"]

_WORD = re.compile(r"\w+")


class PlannerScriptError(ForgeError, ValueError):
    code = "invalid_planner_script"


def is_goal_script(data: object) -> bool:
    """Whether ``data`` (a parsed file) is a script rather than a plan document."""
    return isinstance(data, Mapping) and "answers" in data


@dataclass(frozen=True)
class ScriptAnswer:
    example: str
    words: tuple[str, ...]
    rationale: str
    plans: tuple[PlanDocument, ...]

    def score(self, goal_words: Sequence[str]) -> int:
        return sum(1 for word in self.words if any(w.startswith(word) for w in goal_words))


class GoalScriptPlanner:
    def __init__(
        self,
        answers: Sequence[ScriptAnswer],
        otherwise: ScriptAnswer | None = None,
        *,
        name: str = "scripted",
        think_seconds: float = 0.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.answers = tuple(answers)
        self.otherwise = otherwise
        self.name = name
        self.think_seconds = think_seconds
        self._sleep = sleep

    @property
    def examples(self) -> tuple[str, ...]:
        """The goals it knows, in its words."""
        return tuple(answer.example for answer in self.answers)

    @classmethod
    def from_data(
        cls, data: object, *, name: str, limits: ImportLimits = DEFAULT_LIMITS
    ) -> GoalScriptPlanner:
        """The script ``data`` (a parsed file); ``PlannerScriptError`` names what is wrong."""
        if not isinstance(data, Mapping):
            raise PlannerScriptError(f"{name}: a planner script is a mapping")
        unknown = set(data) - {"answers", "otherwise", "think_seconds"}
        if unknown:
            raise PlannerScriptError(f"{name}: unknown field(s) {', '.join(sorted(unknown))}")
        answers = data.get("answers")
        if not isinstance(answers, list):
            raise PlannerScriptError(f"{name}: answers is a list")
        think = data.get("think_seconds", 0)
        if not isinstance(think, int | float) or isinstance(think, bool) or not 0 <= think <= 60:
            raise PlannerScriptError(f"{name}: think_seconds is a number from 0 to 60")
        otherwise = data.get("otherwise")
        return cls(
            [
                _answer(item, f"{name}: answers[{n}]", limits, True)
                for n, item in enumerate(answers)
            ],
            None if otherwise is None else _answer(otherwise, f"{name}: otherwise", limits, False),
            name=name,
            think_seconds=float(think),
        )

    def plan(self, task: str, observation: Observation) -> StructuredPlan:
        if observation.is_replan:
            raise PlannerExhausted(
                f"{self.name} answers new plans from a goal, not replans: a person (or a "
                "model as FORGE_PLANNER) writes the next version"
            )
        goal = task.strip().splitlines()[0] if task.strip() else task
        answer = self._answer_for(goal)
        refused = observation.feedback.attempt if observation.feedback is not None else 0
        document = replace(answer.plans[min(refused, len(answer.plans) - 1)], goal=goal)
        if self.think_seconds:
            self._sleep(self.think_seconds)
        return StructuredPlan(
            document,
            None,
            f"plan for: {task}",
            self.name,
            told=planner_request(task, observation, 8000),
            answered=json.dumps(to_data(document), ensure_ascii=False),
            rationale=answer.rationale,
        )

    def _answer_for(self, goal: str) -> ScriptAnswer:
        words = _WORD.findall(goal.lower())
        best = max(self.answers, key=lambda a: a.score(words), default=None)
        if best is not None and best.score(words) > 0:
            return best
        if self.otherwise is not None:
            return self.otherwise
        known = "; ".join(self.examples) or "none"
        raise PlannerExhausted(f"{self.name} has no answer for this goal; it knows: {known}")


def _answer(item: object, where: str, limits: ImportLimits, listed: bool) -> ScriptAnswer:
    if not isinstance(item, Mapping):
        raise PlannerScriptError(f"{where} is a mapping")
    allowed = {"example", "words", "rationale", "plans"} if listed else {"rationale", "plans"}
    unknown = set(item) - allowed
    if unknown:
        raise PlannerScriptError(f"{where}: unknown field(s) {', '.join(sorted(unknown))}")
    example = item.get("example")
    if listed and (not isinstance(example, str) or not example.strip()):
        raise PlannerScriptError(f"{where}: example is a goal it knows, for people to read")
    words = item.get("words", [])
    if listed and (
        not isinstance(words, list) or not words or not all(isinstance(w, str) for w in words)
    ):
        raise PlannerScriptError(f"{where}: words is a list of one or more words")
    plans = item.get("plans")
    if not isinstance(plans, list) or not plans:
        raise PlannerScriptError(f"{where}: plans is a list of one or more plan documents")
    documents = []
    for index, plan in enumerate(plans):
        try:
            documents.append(from_data(plan, limits))
        except PlanDocumentError as exc:
            path = f".{exc.path}" if exc.path else ""
            raise PlannerScriptError(f"{where}.plans[{index}]{path}: {exc.message}") from None
    return ScriptAnswer(
        str(example or "").strip(),
        tuple(word.lower() for word in words),
        str(item.get("rationale") or ""),
        tuple(documents),
    )
