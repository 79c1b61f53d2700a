"""The names spans and their attributes carry: the GenAI semantic conventions'
(``gen_ai.*``) and Forge's own (``forge.*``), and the span names built from them.

GenAI spans are named ``{gen_ai.operation.name} {target}``: ``invoke_agent <agent>``,
``execute_tool <tool>``, ``chat <model>``. A step that calls one tool is not an operation
of the conventions, so its span is ``step <step id>`` and its tool call the
``execute_tool`` span under it; an agent step is ``invoke_agent <step id>``.
"""

from __future__ import annotations

__all__ = [
    "AGENT_NAME",
    "APPROVAL_EVENT",
    "APPROVER",
    "ERROR_CODE",
    "OPERATION",
    "PLAN_ID",
    "PLAN_NAME",
    "PLAN_VERSION",
    "REPLAN_LINK",
    "REQUEST_MODEL",
    "RERUN_LINK",
    "RESPONSE_MODEL",
    "RUN_ID",
    "STEP_ATTEMPT",
    "STEP_ID",
    "STEP_OUTPUT",
    "STEP_RESULT",
    "TOOL_ARGUMENTS",
    "TOOL_CALL_ID",
    "TOOL_NAME",
    "TOOL_RESULT",
    "TOOL_TYPE",
    "USAGE_COST",
    "USAGE_INPUT_TOKENS",
    "USAGE_OUTPUT_TOKENS",
    "USAGE_TOKENS",
    "chat_span_name",
    "run_span_name",
    "step_span_name",
    "tool_span_name",
]

# GenAI semantic conventions (opentelemetry.io/docs/specs/semconv/gen-ai/).
OPERATION = "gen_ai.operation.name"
AGENT_NAME = "gen_ai.agent.name"
TOOL_NAME = "gen_ai.tool.name"
TOOL_TYPE = "gen_ai.tool.type"
TOOL_CALL_ID = "gen_ai.tool.call.id"
TOOL_ARGUMENTS = "gen_ai.tool.call.arguments"  # opt-in content: FORGE_TRACE_CONTENT=1
TOOL_RESULT = "gen_ai.tool.call.result"  # opt-in content: FORGE_TRACE_CONTENT=1
REQUEST_MODEL = "gen_ai.request.model"
RESPONSE_MODEL = "gen_ai.response.model"
USAGE_INPUT_TOKENS = "gen_ai.usage.input_tokens"
USAGE_OUTPUT_TOKENS = "gen_ai.usage.output_tokens"

# Forge's own.
RUN_ID = "forge.run.id"
PLAN_ID = "forge.plan.id"
PLAN_NAME = "forge.plan.name"
PLAN_VERSION = "forge.plan.version"
STEP_ID = "forge.step.id"
STEP_ATTEMPT = "forge.step.attempt"
# How the attempt ended (succeeded or failed) before the Scheduler checks the step's
# contract: a run's events, not its trace, say whether the step was then valid.
STEP_RESULT = "forge.step.result"
STEP_OUTPUT = "forge.step.output"  # opt-in content: FORGE_TRACE_CONTENT=1
ERROR_CODE = "forge.error.code"
USAGE_TOKENS = "forge.usage.tokens"  # a step's whole use, all of its model turns
USAGE_COST = "forge.usage.cost"
APPROVER = "forge.approval.approver"
APPROVAL_EVENT = "forge.approval"  # a span event: a person (or the policy) approved
# A link's ``forge.link`` attribute says why two spans are linked.
REPLAN_LINK = "replan"  # a new version's span to the version it replaced
RERUN_LINK = "rerun"  # a re-run's first span to the run it re-ran


def run_span_name(plan_name: str) -> str:
    """The span of a run on one plan version: Forge acting as an agent on the plan."""
    return f"invoke_agent {plan_name}"


def step_span_name(step_id: str, *, agent: bool) -> str:
    return f"invoke_agent {step_id}" if agent else f"step {step_id}"


def tool_span_name(tool: str) -> str:
    return f"execute_tool {tool}"


def chat_span_name(model: str) -> str:
    return f"chat {model}" if model else "chat"
