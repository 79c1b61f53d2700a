"""What the API answers, as frozen values: versions, compile results, runs, events and
evaluation reports.

Each value is read from the API's JSON by ``from_data`` and keeps the fields a client acts
on; the few that hold free-form JSON (a plan document, a step's output, an event's facts)
stay as they came. These mirror the core's own types (``forge.compiler.Diagnostic``,
``forge.runtime.RunEvent``) on purpose rather than reuse them: importing those loads the
compiler and the runtime, a second or so, which a small client has no need of.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "FINAL_RUN_STATUSES",
    "Approval",
    "Compiled",
    "Diagnostic",
    "Evaluation",
    "Event",
    "Run",
    "Step",
    "Version",
]

# A run in one of these admits nothing more (as forge.runtime.status says).
FINAL_RUN_STATUSES = frozenset({"succeeded", "failed", "budget_exhausted", "cancelled"})


@dataclass(frozen=True)
class Diagnostic:
    """One problem the compiler found: a stable ``code``, ``severity`` (error, warning or
    info), a message, the step ids and ``[dependency, dependent]`` edges concerned, and
    for some codes a ``hint`` saying how to fix it."""

    code: str
    severity: str
    message: str
    nodes: tuple[str, ...] = ()
    edges: tuple[tuple[str, str], ...] = ()
    hint: str = ""

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> Diagnostic:
        return cls(
            code=str(data["code"]),
            severity=str(data["severity"]),
            message=str(data["message"]),
            nodes=tuple(str(node) for node in data.get("nodes", ())),
            edges=tuple((str(a), str(b)) for a, b in data.get("edges", ())),
            hint=str(data.get("hint") or ""),
        )

    def to_data(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "code": self.code,
            "severity": self.severity,
            "message": self.message,
            "nodes": list(self.nodes),
            "edges": [list(edge) for edge in self.edges],
        }
        if self.hint:
            data["hint"] = self.hint
        return data


def _diagnostics(data: Any) -> tuple[Diagnostic, ...]:
    return tuple(Diagnostic.from_data(item) for item in data or ())


@dataclass(frozen=True)
class Compiled:
    """``POST /compile``: whether the document compiles, every diagnostic, and the
    executable graph (``None`` when it does not compile)."""

    ok: bool
    diagnostics: tuple[Diagnostic, ...]
    graph: Mapping[str, Any] | None = field(default=None, compare=False)

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> Compiled:
        return cls(bool(data["ok"]), _diagnostics(data["diagnostics"]), data.get("graph"))


@dataclass(frozen=True)
class Approval:
    """One review decision on a version: ``reviewer`` is a username, or ``policy``."""

    reviewer: str
    decision: str  # "approved" or "rejected"
    comment: str
    by_policy: bool
    content_hash: str
    created_at: str

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> Approval:
        return cls(
            reviewer=str(data["reviewer"]),
            decision=str(data["decision"]),
            comment=str(data.get("comment", "")),
            by_policy=bool(data.get("by_policy", False)),
            content_hash=str(data.get("content_hash", "")),
            created_at=str(data.get("created_at", "")),
        )


@dataclass(frozen=True)
class Version:
    """A plan version and its review state. ``status``: ``draft``, ``has_errors``,
    ``awaiting_approval``, ``approved``, ``rejected``, ``changes_requested`` (the latest
    decision) or ``superseded`` (a newer version, ``superseded_by``, was submitted while
    it waited: it can never be approved or run)."""

    plan_id: int
    number: int
    status: str
    has_errors: bool
    content_hash: str
    author: str
    parent: int | None
    note: str
    replan_reason: str
    created_at: str
    diagnostics: tuple[Diagnostic, ...]
    approvals: tuple[Approval, ...]
    superseded_by: int | None = None
    document: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)
    # While it waits: what the approval rules still lack ("rule payments needs 1 of
    # finance"), as the server judged them (SPEC section 10).
    waiting_for: tuple[str, ...] = ()

    @property
    def waiting(self) -> bool:
        """Submitted and waiting for a person's decision."""
        return self.status == "awaiting_approval"

    @property
    def approved(self) -> bool:
        return self.status == "approved"

    @property
    def errors(self) -> tuple[Diagnostic, ...]:
        return tuple(d for d in self.diagnostics if d.severity == "error")

    @property
    def decision(self) -> Approval | None:
        """The latest decision, which the status follows (the API lists them oldest
        first); ``None`` before any."""
        return self.approvals[-1] if self.approvals else None

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> Version:
        parent, newer = data.get("parent"), data.get("superseded_by")
        return cls(
            plan_id=int(data["plan"]),
            number=int(data["number"]),
            status=str(data["status"]),
            has_errors=bool(data["has_errors"]),
            content_hash=str(data["content_hash"]),
            author=str(data["author"]),
            parent=None if parent is None else int(parent),
            note=str(data.get("note", "")),
            replan_reason=str(data.get("replan_reason", "")),
            created_at=str(data.get("created_at", "")),
            diagnostics=_diagnostics(data.get("diagnostics")),
            approvals=tuple(Approval.from_data(item) for item in data.get("approvals") or ()),
            superseded_by=None if newer is None else int(newer),
            document=dict(data.get("document") or {}),
            waiting_for=tuple(str(item) for item in data.get("waiting_for") or ()),
        )


@dataclass(frozen=True)
class Step:
    """A step of a run in its current version."""

    step_id: str
    status: str
    attempt: int
    tool: str
    error: str
    approved_by: str
    output: Any = field(default=None, compare=False)
    preview: Mapping[str, Any] | None = field(default=None, compare=False)

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> Step:
        return cls(
            step_id=str(data["step_id"]),
            status=str(data["status"]),
            attempt=int(data.get("attempt", 0)),
            tool=str(data.get("tool", "")),
            error=str(data.get("error", "")),
            approved_by=str(data.get("approved_by", "")),
            output=data.get("output"),
            preview=data.get("preview"),
        )


@dataclass(frozen=True)
class Run:
    """A run: its status, the seq of its newest event, why it stopped, and its steps."""

    id: int
    plan_id: int
    version: int
    status: str
    started_by: str
    last_seq: int
    replans: int
    failed_step: str
    blocked_reason: str
    steps: tuple[Step, ...]
    executor: str = "worker"

    @property
    def finished(self) -> bool:
        """Nothing more will happen: succeeded, failed, out of budget or cancelled."""
        return self.status in FINAL_RUN_STATUSES

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> Run:
        return cls(
            id=int(data["id"]),
            plan_id=int(data["plan_id"]),
            version=int(data["version"]),
            status=str(data["status"]),
            started_by=str(data["started_by"]),
            last_seq=int(data["last_seq"]),
            replans=int(data.get("replans", 0)),
            failed_step=str(data.get("failed_step", "")),
            blocked_reason=str(data.get("blocked_reason", "")),
            steps=tuple(Step.from_data(item) for item in data.get("steps") or ()),
            executor=str(data.get("executor", "worker")),
        )


@dataclass(frozen=True)
class Event:
    """One run event (``seq`` is gapless per run); ``data`` is the event as the API sent
    it, with every field of ``forge.runtime.RunEvent``."""

    seq: int
    event_type: str
    step_id: str | None
    step_status: str | None
    blocked_reason: str
    actor: str
    created_at: str
    data: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> Event:
        step_id, step_status = data.get("step_id"), data.get("step_status")
        return cls(
            seq=int(data["seq"]),
            event_type=str(data["event_type"]),
            step_id=None if step_id is None else str(step_id),
            step_status=None if step_status is None else str(step_status),
            blocked_reason=str(data.get("blocked_reason", "")),
            actor=str(data.get("actor", "")),
            created_at=str(data.get("created_at", "")),
            data=dict(data),
        )


@dataclass(frozen=True)
class Evaluation:
    """An evaluation report the site stored (``forge eval --report-to``): its id, what
    was evaluated, by whom, and the page that shows it."""

    id: int
    suite: str
    planner: str
    model: str
    uploaded_by: str
    success_rate: float
    url: str

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> Evaluation:
        return cls(
            id=int(data["id"]),
            suite=str(data["suite"]),
            planner=str(data["planner"]),
            model=str(data.get("model", "")),
            uploaded_by=str(data["uploaded_by"]),
            success_rate=float(data["success_rate"]),
            url=str(data.get("url", "")),
        )
