"""``LLMPlanner``: a plan document from any chat model behind a ``ModelPort``.

The model is asked for one JSON plan document, with ``response_format`` carrying
``PLAN_SCHEMA`` when the endpoint supports structured output: an endpoint that refuses
it (HTTP 400 or 422) is asked again without it, and not offered it again. The answer is
read as any imported document is, with the import limits and ``forge.plan.from_data``,
after taking off its ``rationale`` (why this plan, shown to the reviewer);
anything else (no JSON, a wrong field, tool calls instead of text) raises
``PlannerOutputInvalid`` (``invalid_plan_output``), so an invalid answer never becomes a
version and never runs. Model failures raise ``ModelError`` with its own code.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from forge.errors import PlanDocumentError
from forge.models import ModelError, ModelPort, ModelReply
from forge.models.config import Endpoint, model_from_spec
from forge.plan import DEFAULT_LIMITS, PLAN_SCHEMA, ImportLimits, PlanDocument, from_data
from forge.plan.formats.json_io import parse_json
from forge.planners.port import Observation, StructuredPlan
from forge.planners.prompt import planner_messages
from forge.tools.spec import ToolSpec

__all__ = ["ANSWER_SCHEMA", "RESPONSE_FORMAT", "LLMPlanner", "PlannerOutputInvalid"]

# The plan document, with one more field the reader takes off before reading it: the
# planner's rationale, which a reviewer reads next to the plan.
ANSWER_SCHEMA: dict[str, Any] = {
    **PLAN_SCHEMA,
    "properties": {
        **PLAN_SCHEMA["properties"],
        "rationale": {"type": "string", "description": "why this plan, for the reviewer"},
    },
}
RESPONSE_FORMAT: dict[str, Any] = {
    "type": "json_schema",
    "json_schema": {"name": "forge_plan", "schema": ANSWER_SCHEMA, "strict": False},
}
_FENCE = re.compile(r"^```(?:json)?\s*\n(.*)\n```$", re.DOTALL)


class PlannerOutputInvalid(PlanDocumentError):
    """The model's answer is not a valid plan document; ``reason_code`` is the code of
    what was wrong with it (``invalid_json``, ``invalid_document``, ...)."""

    code = "invalid_plan_output"

    def __init__(
        self,
        message: str,
        *,
        reason_code: str = "",
        path: str = "",
        reply: ModelReply | None = None,
        told: str = "",
    ) -> None:
        super().__init__(message, path=path)
        self.reason_code = reason_code
        # What the refused answer was and cost, for the transcript and the retry.
        self.answered = reply.content if reply is not None else ""
        self.tokens = reply.tokens if reply is not None else 0
        self.cost = reply.cost if reply is not None else 0.0
        self.model = reply.model if reply is not None else ""
        self.told = told


class LLMPlanner:
    def __init__(
        self,
        model: ModelPort,
        *,
        tools: Iterable[ToolSpec] = (),
        structured_output: bool = True,
        limits: ImportLimits = DEFAULT_LIMITS,
        max_chars: int = 8000,
    ) -> None:
        self.model = model
        self.tools = tuple(tools)
        self.structured_output = structured_output
        self.limits = limits
        self.max_chars = max_chars
        self.name = f"llm:{model.name.partition(':')[2] or model.name}"

    @classmethod
    def for_endpoint(cls, model: str, endpoint: Endpoint, **options: Any) -> LLMPlanner:
        """A planner speaking to ``model`` at an OpenAI-compatible ``endpoint``."""
        return cls(model_from_spec(f"openai:{model}", endpoint), **options)

    def plan(self, task: str, observation: Observation) -> StructuredPlan:
        """Raises ``PlannerOutputInvalid`` or ``ModelError``; never returns an invalid plan."""
        messages = planner_messages(task, observation, self.tools, self.max_chars)
        if self.structured_output:
            try:
                reply = self.model.complete(messages, response_format=RESPONSE_FORMAT)
            except ModelError as exc:
                if exc.code != "model_http_error" or exc.status not in (400, 422):
                    raise
                reply = self.model.complete(messages)
                self.structured_output = False  # the endpoint has no structured output
        else:
            reply = self.model.complete(messages)
        told = str(messages[-1].content)
        try:
            document, rationale = self._document(reply)
        except PlannerOutputInvalid as exc:
            raise PlannerOutputInvalid(
                exc.message, reason_code=exc.reason_code, path=exc.path, reply=reply, told=told
            ) from None
        reason = (
            f"replan after step {observation.failed_step!r} failed: {observation.error}"
            if observation.is_replan
            else f"plan for: {task}"
        )
        return StructuredPlan(
            document,
            observation.current_version,
            reason,
            self.name,
            tokens=reply.tokens,
            cost=reply.cost,
            model=reply.model,
            told=told,
            answered=reply.content,
            rationale=rationale,
        )

    def _document(self, reply: ModelReply) -> tuple[PlanDocument, str]:
        if reply.tool_calls:
            raise PlannerOutputInvalid(
                "the model called tools instead of answering with a plan document",
                reason_code="tool_calls",
            )
        text = reply.content.strip()
        fenced = _FENCE.match(text)
        text = fenced.group(1) if fenced else text
        try:
            self.limits.check_size(len(text.encode()))
            data = parse_json(text, self.limits)
            rationale = ""
            if isinstance(data, dict) and isinstance(data.get("rationale"), str):
                data = dict(data)
                rationale = data.pop("rationale").strip()[:2000]
            return from_data(data, self.limits), rationale
        except PlanDocumentError as exc:
            raise PlannerOutputInvalid(
                f"the model's answer is not a valid plan document: {exc.message} [{exc.code}]",
                reason_code=exc.code,
                path=exc.path,
            ) from None
