"""API shapes of plans, versions, approvals, compile results, diffs and the tool catalogue."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from ninja import Field, Schema
from pydantic import (
    AfterValidator,
    SerializerFunctionWrapHandler,
    model_serializer,
    model_validator,
)

from forge.tools import Risk, SideEffect
from plans.documents import storable_text
from plans.layout import LIMIT as LAYOUT_LIMIT
from plans.models import Approval, Plan, PlanVersion, VersionStatus
from plans.rules import shown_judgement

MAX_NUMBER = 2_147_483_647  # PositiveIntegerField's ceiling on every database
TEXT_LIMIT = 10_000


def _storable(value: str) -> str:
    if not storable_text(value):
        raise ValueError("text may not contain NUL characters or lone surrogates")
    return value


Text = Annotated[str, AfterValidator(_storable)]

# A plan that compiles with the built-in tools: the OpenAPI examples (and so the docs'
# "try it out" and schemathesis's first requests).
EXAMPLE_DOCUMENT: dict[str, Any] = {
    "goal": "Summarise the release notes",
    "deliverable": "publish",
    "steps": [
        {
            "id": "read",
            "description": "Read the release notes file",
            "depends_on": [],
            "tool": "file_read",
            "args": {"path": "notes.md"},
            "done_when": {"description": "notes read", "required_keys": ["content"]},
        },
        {
            "id": "publish",
            "description": "Publish the summary of the notes",
            "depends_on": ["read"],
            "tool": "echo",
            "args": {"summary": "ok"},
            "done_when": {"required_keys": ["summary"]},
        },
    ],
}
EXAMPLE_SOURCE = (
    "goal: Say hello\n"
    "steps:\n"
    "  - id: hello\n"
    "    description: Echo a greeting to the caller\n"
    "    tool: echo\n"
    "    args: {greeting: hello}\n"
    "    done_when: {required_keys: [greeting]}\n"
)


def _examples(*examples: dict[str, Any]) -> Any:
    return {"json_schema_extra": {"examples": list(examples)}}


Status = Literal[
    "draft",
    "has_errors",
    "awaiting_approval",
    "approved",
    "rejected",
    "changes_requested",
    "superseded",
]
ImportFormat = Literal["json", "yaml", "mermaid"]


# --- In -----------------------------------------------------------------------------------


class DocumentIn(Schema):
    """A plan document: ``document`` (a JSON object), or ``source`` text in ``format``."""

    document: dict[str, Any] | None = Field(
        None, description="the forge.plan/v1 document as a JSON object"
    )
    format: ImportFormat | None = Field(None, description="the format of source; guessed if absent")
    source: str | None = Field(None, description="the document as JSON, YAML or Mermaid text")

    model_config = _examples(
        {"document": EXAMPLE_DOCUMENT}, {"format": "yaml", "source": EXAMPLE_SOURCE}
    )

    @model_validator(mode="after")
    def _one_document(self) -> DocumentIn:
        if (self.document is None) == (self.source is None):
            raise ValueError("give either 'document' or 'source' (with its 'format')")
        if self.format is not None and self.source is None:
            raise ValueError("'format' goes with 'source'")
        return self


class PlanIn(DocumentIn):
    model_config = _examples({"name": "Release notes", "document": EXAMPLE_DOCUMENT})

    name: Text = Field(min_length=1, max_length=200)
    note: Text = Field("", max_length=TEXT_LIMIT, description="the change note of version 1")
    submit: bool = Field(True, description="ask for review now (false: save a draft)")


Coordinate = Annotated[float, Field(allow_inf_nan=False, ge=-LAYOUT_LIMIT, le=LAYOUT_LIMIT)]


class LayoutIn(Schema):
    """Where the author placed the steps: presentation only, outside the content hash."""

    positions: dict[str, tuple[Coordinate, Coordinate]] = Field(
        default_factory=dict,
        max_length=100_000,
        description="step id -> [x, y] on the graph; steps the document lacks are dropped",
    )


class VersionIn(DocumentIn):
    model_config = _examples({"document": EXAMPLE_DOCUMENT, "note": "clearer goal"})

    note: Text = Field("", max_length=TEXT_LIMIT, description="what changed and why")
    parent: int | None = Field(
        None, ge=1, le=MAX_NUMBER, description="number of the version this derives from; "
        "the latest when absent",
    )  # fmt: skip
    replan_reason: Text = Field("", max_length=TEXT_LIMIT)
    submit: bool = Field(True, description="ask for review now (false: save a draft)")
    layout: LayoutIn | None = Field(
        None, description="steps placed by hand; absent or empty: the automatic layout"
    )


class DecisionIn(Schema):
    model_config = _examples({"comment": "Looks right"})

    comment: Text = Field("", max_length=TEXT_LIMIT)


class PlanFilters(Schema):
    q: Text | None = Field(None, max_length=200, description="part of the name, any case")
    status: Status | None = Field(None, description="status of the latest version")


class DiffQuery(Schema):
    from_: int = Field(
        alias="from",
        ge=1,
        le=MAX_NUMBER,
        json_schema_extra={"example": 1},
        description="version number",
    )
    to: int = Field(
        ge=1, le=MAX_NUMBER, json_schema_extra={"example": 2}, description="version number"
    )


class ExportQuery(Schema):
    format: Literal["json", "yaml", "mermaid", "dot"] = "json"


# --- Out ----------------------------------------------------------------------------------


class DiagnosticOut(Schema):
    code: str
    severity: Literal["error", "warning", "info"]
    message: str
    nodes: list[str]
    edges: list[list[str]] = Field(description="[dependency, dependent] pairs")
    hint: str = Field("", description="how to fix it; only for codes that say (else absent)")

    @model_serializer(mode="wrap")
    def _hint_only_when_given(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        if not data.get("hint"):
            data.pop("hint", None)
        return data


class SideEffectOut(Schema):
    tool: str
    step: str
    args_hash: str


class ApprovalOut(Schema):
    id: int
    reviewer: str = Field(description="who decided: a username, or 'policy'")
    by_policy: bool = Field(description="approved by the deployment policy (a read-only replan)")
    decision: Literal["approved", "rejected", "changes_requested"]
    comment: str
    content_hash: str = Field(description="the document's hash as the reviewer saw it")
    teams: list[str] = Field(description="the reviewer's teams when they decided")
    created_at: datetime

    @staticmethod
    def resolve_reviewer(approval: Approval) -> str:
        return approval.reviewer_name


class DecisionOut(ApprovalOut):
    """A decision just made, with where it left the version: under approval rules an
    approval may count without being enough (SPEC section 10)."""

    version_status: str = Field(description="the version's status after this decision")
    waiting_for: list[str] = Field(
        description="what the approval rules still lack, in words ('rule payments needs 1 "
        "of finance'); empty once approved or stopped"
    )

    @staticmethod
    def resolve_version_status(approval: Approval) -> str:
        return str(approval.version.status)

    @staticmethod
    def resolve_waiting_for(approval: Approval) -> list[str]:
        return _waiting_for(approval.version)


def _waiting_for(version: PlanVersion) -> list[str]:
    """What the approval rules still lack for ``version`` while it awaits approval."""
    if version.status != VersionStatus.AWAITING_APPROVAL:
        return []
    judgement = shown_judgement(version)
    return [] if judgement is None else list(judgement.lacking())


class VersionSummaryOut(Schema):
    id: int = Field(description="the version's id, as /versions/{id}/... names it")
    plan: int
    number: int
    status: Status
    has_errors: bool
    content_hash: str
    parent: int | None = Field(description="number of the version this derives from")
    superseded_by: int | None = Field(
        description="number of the newer version whose submission superseded this one "
        "(status superseded), else null"
    )
    replan_reason: str
    note: str
    author: str
    planner: str
    source_format: str
    created_at: datetime

    @staticmethod
    def resolve_plan(version: PlanVersion) -> int:
        return version.plan_id

    @staticmethod
    def resolve_parent(version: PlanVersion) -> int | None:
        return version.parent.number if version.parent_id else None

    @staticmethod
    def resolve_superseded_by(version: PlanVersion) -> int | None:
        return version.superseded_by.number if version.superseded_by_id else None

    @staticmethod
    def resolve_author(version: PlanVersion) -> str:
        return version.author.username


class RuleStatusOut(Schema):
    """One approval rule matching a version (SPEC section 10)."""

    id: str = Field(description="the rule's id ('default' when no rule matches)")
    description: str
    team: str | None = Field(description="only its members count; null: anyone")
    required: int = Field(description="distinct people other than the author")
    approved_by: list[str] = Field(description="who counts toward it, since the latest stop")
    satisfied: bool


class VersionOut(VersionSummaryOut):
    document: dict[str, Any]
    layout: dict[str, Any] = Field(
        description="{positions: {step: [x, y]}} placed by hand, or {}; not in the content hash"
    )
    diagnostics: list[DiagnosticOut]
    approvals: list[ApprovalOut]
    rules: list[RuleStatusOut] = Field(
        description="each approval rule matching the version, with who counts toward it "
        "(empty for a version with compile errors)"
    )
    not_counted: list[str] = Field(
        description="people whose approval counts toward no matching rule (a comment-like "
        "approval: they are in none of the teams asked for)"
    )
    waiting_for: list[str] = Field(
        description="while it awaits approval: what the approval rules still lack, in words "
        "('rule payments needs 1 of finance'); empty otherwise"
    )
    performed_side_effects: list[SideEffectOut]

    @staticmethod
    def resolve_approvals(version: PlanVersion) -> list[Approval]:
        return list(version.approvals.all())

    @staticmethod
    def resolve_rules(version: PlanVersion) -> list[dict[str, Any]]:
        judgement = shown_judgement(version)
        return [] if judgement is None else [rule.to_data() for rule in judgement.rules]

    @staticmethod
    def resolve_not_counted(version: PlanVersion) -> list[str]:
        judgement = shown_judgement(version)
        return [] if judgement is None else list(judgement.not_counted)

    @staticmethod
    def resolve_waiting_for(version: PlanVersion) -> list[str]:
        return _waiting_for(version)


class PlanOut(Schema):
    id: int
    name: str
    created_by: str
    created_at: datetime
    status: Status = Field(description="status of the latest version")
    latest_version: VersionSummaryOut

    @staticmethod
    def resolve_created_by(plan: Plan) -> str:
        return plan.created_by.username

    @staticmethod
    def resolve_status(plan: Plan) -> str:
        return plan.latest_version.status  # type: ignore[union-attr]


class PlanDetailOut(PlanOut):
    latest_version: VersionOut  # type: ignore[assignment]


class NodeOut(Schema):
    id: str
    tool: str | None
    allowed_tools: list[str]
    args_hash: str | None
    side_effect: str | None
    timeout_s: float | None
    approval_reasons: list[str]
    depends_on: list[str]
    fingerprint: str


class DataEdgeOut(Schema):
    source: str = Field(description="the step whose output is taken")
    target: str = Field(description="the step whose argument takes it")
    path: str = Field(description="where in the output ('' for all of it)")
    at: str = Field(description="the argument it fills")


class GraphOut(Schema):
    content_hash: str
    deliverable: str
    order: list[str]
    nodes: list[NodeOut]
    edges: list[list[str]]
    data_edges: list[DataEdgeOut] = Field(
        description="arguments that take an earlier step's output ($from; docs/plan-format.md)"
    )


class McpUseOut(Schema):
    server: str
    tools: list[str]


class StepPauseOut(Schema):
    step: str
    reasons: list[str]


class DurationOut(Schema):
    seconds: float = Field(description="the critical path of the steps' duration estimates")
    path: list[str] = Field(description="the steps on that path, in order")
    unknown: list[str] = Field(description="steps without a duration estimate (counted as 0)")
    text: str


class ImpactOut(Schema):
    """What a version that compiles will touch, ask, cost and take
    (``forge.compiler.impact``)."""

    steps: int
    scopes: list[str]
    side_effects: dict[str, int] = Field(description="side-effect class: steps")
    agent_steps: int
    hosts: list[str]
    hosts_unknown: list[str] = Field(description="steps whose host is decided at run time")
    mcp: list[McpUseOut]
    files_written: list[str]
    files_unknown: list[str]
    commands: list[str]
    pauses: list[StepPauseOut] = Field(description="steps that will wait for approval")
    reviews: list[str] = Field(description="milestones that end in a person's review")
    plan_scopes: list[str]
    tokens: int
    cost: float
    estimated_steps: int
    duration: DurationOut


class CompileOut(Schema):
    ok: bool
    diagnostics: list[DiagnosticOut]
    graph: GraphOut | None
    impact: ImpactOut | None


class FieldChangeOut(Schema):
    field: str
    before: Any
    after: Any
    lines: list[str] = Field(
        description="The change as the pages show it: `path: before → after`, down to the "
        "part that changed (`args.content`, `done_when.checks: + ...`)"
    )


class StepChangeOut(Schema):
    id: str
    changes: list[FieldChangeOut]


class DiffOut(Schema):
    plan: int
    from_: int = Field(alias="from")
    to: int
    added_steps: list[str]
    removed_steps: list[str]
    changed_steps: list[StepChangeOut]
    added_edges: list[list[str]]
    removed_edges: list[list[str]]
    plan_changes: list[FieldChangeOut]


class ToolOut(Schema):
    name: str
    description: str
    args_schema: dict[str, Any]
    permission_scope: str
    side_effect: SideEffect
    idempotent: bool
    risk: Risk
    default_timeout_s: float
    source: str = Field(description='"builtin", "python:<module>" or "mcp:<server>"')
    output_schema: dict[str, Any] | None = Field(
        description="the output's declared shape, which $from paths are checked against"
    )
    echoes_args: bool = Field(description="the output is the call's own arguments (echo)")
    allowed: bool = Field(description="whether the policy lets plans use it")
    requires_approval: bool = Field(description="whether the policy makes every call wait")
    policy_reasons: list[str] = Field(description="why it is refused, or why calls wait")


class ToolServerOut(Schema):
    name: str = Field(description="the MCP server's name, the prefix of its tools' ids")
    transport: Literal["stdio", "http"]
    available: bool
    error: str = Field(description="why it is not available (credentials masked); empty if it is")
    tools: list[str] = Field(description="the ids of its tools, as last discovered")
    checked_at: datetime = Field(description="when this process last asked it")


class GenerateIn(Schema):
    """A person's request for a plan: the planner proposes version 1."""

    goal: Text = Field(min_length=1, max_length=2000, description="what the plan should achieve")
    context: Text = Field("", max_length=8000, description="what the planner should know")
    constraints: Text = Field("", max_length=8000, description="what the plan must keep to")
    name: Text = Field("", max_length=200, description="the plan's name; default: the goal")


class AttemptOut(Schema):
    number: int
    told: str = Field(description="what the planner was asked (summarised)")
    answered: str = Field(description="what it answered (summarised)")
    code: str = Field(description="'' when it compiled; does_not_compile; or why it was no plan")
    problems: list[str] = Field(description="why this answer was refused")
    diagnostics: list[dict[str, Any]]
    tokens: int
    cost: float
    model: str


class ProposalOut(Schema):
    id: int
    kind: Literal["generate", "replan"]
    requested_by: str = Field(description="the person the planner worked for (the author)")
    planner: str
    model: str
    status: Literal["working", "cancelled", "proposed", "does_not_compile", "failed"]
    error_code: str
    error: str
    rationale: str
    tokens: int
    cost: float
    plan: int | None
    version: int | None = Field(description="the version's number, when one was saved")
    editor: str | None = Field(description="the editor's URL on that version")
    run: int | None
    attempt: int = Field(description="the attempt being asked (0: no worker took it yet)")
    max_attempts: int
    progress: str = Field(description="where it stands, in words")
    elapsed_seconds: float = Field(description="since it was asked, until it finished")
    attempts: list[AttemptOut]
    created_at: datetime
    finished_at: datetime | None
