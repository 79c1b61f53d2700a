"""Which planner ``forge eval --planner SPEC`` evaluates.

- ``scripted:FILE``: an answers file, a YAML or JSON mapping of case id to the list of
  plan documents the planner answers for that case, in order (version 1, then each
  replan or retry). A case it does not list gets no answer (``planner_exhausted``).
  This one is the evaluation's own: production's ``scripted:FILE[,FILE...]``
  (``forge.planners.config``) is one list of plan documents for one plan, while a suite
  needs a list per case, checked against the suite's case ids before anything runs.
- Anything else is read by production's ``forge.planners.config.planner_from_spec``
  (``openai:MODEL``, or ``llm:MODEL``: an ``LLMPlanner`` over the model at the
  ``Endpoint`` of ``forge.models.config``: ``--base-url``, ``FORGE_MODEL_BASE_URL``, the
  key from ``FORGE_MODEL_API_KEY`` or ``OPENAI_API_KEY``), so the evaluation measures
  the planner FORGE_PLANNER would give the web and the workers. Its model is wrapped in
  a ``MeteredModel`` and shared by the cases; each case's planner is offered the suite's
  tools.

Each case gets a fresh planner. Bad specs and answer files raise ``PlannerSpecError``
(``invalid_planner``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from forge.errors import ForgeError, PlanDocumentError
from forge.evaluation.harness import PlannerFactory
from forge.evaluation.suite import Case, Suite
from forge.models import Message, ModelPort, ModelReply
from forge.models.config import Endpoint
from forge.plan import DEFAULT_LIMITS, ImportLimits, PlanDocument, from_data
from forge.plan.formats.yaml_safe import parse_yaml
from forge.planners import LLMPlanner, PlannerPort, ScriptedPlanner
from forge.planners import config as planners_config
from forge.tools import ToolSpec

__all__ = ["EvalPlanner", "MeteredModel", "PlannerSpecError", "load_answers", "planner_from_spec"]

_LIMITS = ImportLimits(max_bytes=2 * DEFAULT_LIMITS.max_bytes)  # answers for many cases


class PlannerSpecError(ForgeError, ValueError):
    code = "invalid_planner"


@dataclass(frozen=True)
class EvalPlanner:
    """A planner spec made ready: its name in reports and a factory of one per case.
    ``models`` lists the models made, so the caller can close their connections."""

    name: str
    factory: PlannerFactory
    models: tuple[ModelPort, ...] = ()


def planner_from_spec(spec: str, suite: Suite, endpoint: Endpoint | None = None) -> EvalPlanner:
    kind, _, rest = spec.strip().partition(":")
    if kind == "scripted":
        if not rest:
            raise _not_a_planner(spec)
        answers = load_answers(Path(rest), suite)
        name = f"scripted:{Path(rest).name}"

        def scripted(case: Case, tools: Sequence[ToolSpec]) -> PlannerPort:
            return ScriptedPlanner(answers.get(case.id, ()), name=name)

        return EvalPlanner(name, scripted)
    try:
        made = planners_config.planner_from_spec(spec, endpoint)
    except planners_config.PlannerSpecError:
        raise _not_a_planner(spec) from None
    except (ForgeError, ValueError) as exc:
        raise PlannerSpecError(f"--planner {spec}: {exc}") from None
    if not isinstance(made, LLMPlanner):  # the one other kind production reads
        raise PlannerSpecError(f"--planner {spec}: not a planner the evaluation can meter")
    model = MeteredModel(made.model)

    def llm(case: Case, tools: Sequence[ToolSpec]) -> PlannerPort:
        return LLMPlanner(model, tools=tools, limits=made.limits, max_chars=made.max_chars)

    return EvalPlanner(made.name, llm, (model,))


def _not_a_planner(spec: str) -> PlannerSpecError:
    return PlannerSpecError(
        f"--planner takes scripted:FILE, llm:MODEL or openai:MODEL, not {spec!r}"
    )


class MeteredModel:
    """A model that adds up what every completion used, answers that were refused (not a
    plan, or an endpoint without structured output) included: the harness charges each
    answer what the meter moved (``forge.evaluation.harness``)."""

    def __init__(self, model: ModelPort) -> None:
        self.inner = model
        self.name = model.name
        self.tokens = 0
        self.cost = 0.0

    def complete(self, messages: Sequence[Message], *args: Any, **options: Any) -> ModelReply:
        reply = self.inner.complete(messages, *args, **options)
        self.tokens += reply.tokens
        self.cost += reply.cost
        return reply

    def close(self) -> None:
        close = getattr(self.inner, "close", None)
        if close is not None:
            close()


def load_answers(path: Path, suite: Suite) -> Mapping[str, tuple[PlanDocument, ...]]:
    """The answers file at ``path``: each listed case's plan documents, checked."""
    try:
        with path.open("rb") as stream:
            raw = stream.read(_LIMITS.max_bytes + 1)
    except OSError as exc:
        raise PlannerSpecError(f"cannot read answers {path}: {exc.strerror or exc}") from None
    if len(raw) > _LIMITS.max_bytes:
        raise PlannerSpecError(f"answers {path} are over {_LIMITS.max_bytes} bytes")
    try:
        data = parse_yaml(raw.decode("utf-8"), _LIMITS)
    except (UnicodeDecodeError, PlanDocumentError) as exc:
        raise PlannerSpecError(f"answers {path}: {exc}") from None
    if not isinstance(data, dict) or not all(isinstance(v, list) for v in data.values()):
        raise PlannerSpecError(f"answers {path}: map each case id to a list of plan documents")
    known = {case.id for case in suite.cases}
    answers: dict[str, tuple[PlanDocument, ...]] = {}
    for case_id, documents in data.items():
        if case_id not in known:
            raise PlannerSpecError(f"answers {path}: no case {case_id!r} in suite {suite.name}")
        parsed = []
        for index, document in enumerate(documents):
            try:
                parsed.append(from_data(document, _LIMITS))
            except PlanDocumentError as exc:
                where = f"{case_id}[{index}]" + (f".{exc.path}" if exc.path else "")
                raise PlannerSpecError(
                    f"answers {path}: {where}: {exc.message} [{exc.code}]"
                ) from None
        answers[case_id] = tuple(parsed)
    return answers
