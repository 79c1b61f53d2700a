"""An evaluation report (``forge.eval-report/v1``): each case's scores and what it cost,
and the suite's totals; as JSON (``forge eval --json``, the upload to the web) and as a
text table. ``SuiteReport.from_data`` checks a report read back (an upload) against
``REPORT_SCHEMA`` and raises ``ReportInvalid`` (``invalid_report``) naming the place.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from jsonschema import Draft202012Validator

from forge.errors import ForgeError
from forge.evaluation.scores import METRICS, Score
from forge.evaluation.suite import Case
from forge.evaluation.trace import CaseTrace

__all__ = ["REPORT_SCHEMA", "REPORT_VERSION", "CaseResult", "ReportInvalid", "SuiteReport",
           "case_result"]  # fmt: skip

REPORT_VERSION = "forge.eval-report/v1"
_SCORE = {
    "type": "object",
    "required": ["metric", "passed", "value", "detail"],
    "properties": {
        "metric": {"enum": list(METRICS)},
        "passed": {"type": ["boolean", "null"]},
        "value": {"type": ["number", "null"], "minimum": 0, "maximum": 1},
        "detail": {"type": "string", "maxLength": 2000},
        "problems": {"type": "array", "maxItems": 200, "items": {"type": "string"}},
    },
}
_CASE = {
    "type": "object",
    "required": ["id", "scenario", "status", "scores", "tokens", "cost", "latency_ms"],
    "properties": {
        "id": {"type": "string", "pattern": r"^[A-Za-z0-9_.-]{1,64}$"},
        "scenario": {"type": "string", "maxLength": 64},
        "status": {"type": "string", "maxLength": 64},
        "stop_reason": {"type": "string"},
        "scores": {
            "type": "array",
            "minItems": len(METRICS),
            "maxItems": len(METRICS),
            "items": _SCORE,
        },  # fmt: skip
        "tokens": {"type": "integer", "minimum": 0},
        "cost": {"type": "number", "minimum": 0},
        "latency_ms": {"type": "number", "minimum": 0},
        "planning_ms": {"type": "number", "minimum": 0},
        "replans": {"type": "integer", "minimum": 0},
        "plan": {"type": "array", "items": {"type": "string"}},
        "calls": {"type": "array", "items": {"type": "object"}},
    },
}
REPORT_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "required": ["schema", "suite", "planner", "cases"],
    "properties": {
        "schema": {"const": REPORT_VERSION},
        "suite": {"type": "string", "minLength": 1, "maxLength": 64},
        "planner": {"type": "string", "minLength": 1, "maxLength": 300},
        "model": {"type": "string", "maxLength": 200},
        "created_at": {"type": "string"},
        "cases": {"type": "array", "minItems": 1, "maxItems": 500, "items": _CASE},
    },
}
_VALIDATOR = Draft202012Validator(REPORT_SCHEMA)


class ReportInvalid(ForgeError, ValueError):
    code = "invalid_report"


@dataclass(frozen=True)
class CaseResult:
    id: str
    scenario: str
    status: str
    scores: tuple[Score, ...]
    tokens: int
    cost: float
    latency_ms: float
    planning_ms: float = 0.0
    replans: int = 0
    stop_reason: str = ""
    plan: tuple[str, ...] = ()  # the last version's steps, "id: tool"
    details: Mapping[str, Any] = field(default_factory=dict)  # proposals, replans, calls

    def score(self, metric: str) -> Score:
        return next(score for score in self.scores if score.metric == metric)

    def to_data(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "scenario": self.scenario,
            "status": self.status,
            "stop_reason": self.stop_reason,
            "scores": [score.to_data() for score in self.scores],
            "tokens": self.tokens,
            "cost": round(self.cost, 6),
            "latency_ms": round(self.latency_ms, 3),
            "planning_ms": round(self.planning_ms, 3),
            "replans": self.replans,
            "plan": list(self.plan),
            **dict(self.details),
        }

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> CaseResult:
        scores = tuple(Score.from_data(item) for item in data["scores"])
        if sorted(s.metric for s in scores) != sorted(METRICS):
            raise ReportInvalid(f"case {data['id']!r} must have one score of each metric")
        known = set(_CASE["properties"])
        return cls(
            id=data["id"],
            scenario=data["scenario"],
            status=data["status"],
            scores=scores,
            tokens=int(data["tokens"]),
            cost=float(data["cost"]),
            latency_ms=float(data["latency_ms"]),
            planning_ms=float(data.get("planning_ms", 0.0)),
            replans=int(data.get("replans", 0)),
            stop_reason=str(data.get("stop_reason", "")),
            plan=tuple(data.get("plan", ())),
            details={key: value for key, value in data.items() if key not in known},
        )


def case_result(case: Case, trace: CaseTrace, scores: tuple[Score, ...]) -> CaseResult:
    last = trace.versions[-1] if trace.versions else None
    return CaseResult(
        id=case.id,
        scenario=case.scenario,
        status=trace.status,
        scores=scores,
        tokens=trace.planner_tokens + trace.run_tokens,
        cost=trace.planner_cost + trace.run_cost,
        latency_ms=trace.total_ms,
        planning_ms=trace.planning_ms,
        replans=len(trace.replans),
        stop_reason=trace.stop_reason,
        plan=tuple(f"{s.id}: {s.tool or 'agent'}" for s in last.steps) if last else (),
        details={
            "proposals": [p.to_data() for p in trace.first],
            "replan_traces": [r.to_data() for r in trace.replans],
            "calls": [call.to_data() for call in trace.calls],
        },
    )


@dataclass(frozen=True)
class SuiteReport:
    suite: str
    planner: str
    cases: tuple[CaseResult, ...]
    model: str = ""
    created_at: str = field(default_factory=lambda: datetime.now(UTC).isoformat())

    def summary(self) -> dict[str, Any]:
        """Per metric: cases passed, cases it applies to, mean value; and the totals."""
        metrics: dict[str, Any] = {}
        for metric in METRICS:
            scores = [case.score(metric) for case in self.cases]
            applied = [s for s in scores if s.passed is not None]
            values = [s.value for s in applied if s.value is not None]
            metrics[metric] = {
                "passed": sum(1 for s in applied if s.passed),
                "applicable": len(applied),
                "mean": round(sum(values) / len(values), 4) if values else None,
            }
        succeeded = metrics["success"]["passed"]
        cost = sum(case.cost for case in self.cases)
        return {
            "metrics": metrics,
            "cases": len(self.cases),
            "succeeded": succeeded,
            "success_rate": round(succeeded / len(self.cases), 4) if self.cases else 0.0,
            "tokens": sum(case.tokens for case in self.cases),
            "cost": round(cost, 6),
            "seconds": round(sum(case.latency_ms for case in self.cases) / 1000, 3),
            "replans": sum(case.replans for case in self.cases),
            "cost_per_success": round(cost / succeeded, 6) if succeeded else None,
        }

    @property
    def all_passed(self) -> bool:
        return all(score.passed is not False for case in self.cases for score in case.scores)

    def to_data(self) -> dict[str, Any]:
        return {
            "schema": REPORT_VERSION,
            "suite": self.suite,
            "planner": self.planner,
            "model": self.model,
            "created_at": self.created_at,
            "summary": self.summary(),
            "cases": [case.to_data() for case in self.cases],
        }

    @classmethod
    def from_data(cls, data: Any) -> SuiteReport:
        """A report read back; raises ``ReportInvalid`` naming the first problem."""
        errors = sorted(_VALIDATOR.iter_errors(data), key=lambda e: list(map(str, e.path)))
        if errors:
            where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in errors[0].path)
            raise ReportInvalid(f"report{where}: {errors[0].message}")
        ids = [case["id"] for case in data["cases"]]
        if len(set(ids)) != len(ids):
            raise ReportInvalid("report.cases: a case id appears twice")
        return cls(
            suite=data["suite"],
            planner=data["planner"],
            cases=tuple(CaseResult.from_data(item) for item in data["cases"]),
            model=str(data.get("model", "")),
            created_at=str(data.get("created_at") or datetime.now(UTC).isoformat()),
        )

    def render_text(self) -> str:
        return render_table(self)


def _cell(score: Score) -> str:
    if score.passed is None:
        return "-"
    mark = "ok" if score.passed else "FAIL"
    return f"{mark} {score.value:.2f}" if score.value is not None else mark


def render_table(report: SuiteReport) -> str:
    """One row per case and a total row, then each failed score's problems."""
    header = ["case", "scenario", *METRICS[:-1], "budget", "tokens", "cost", "seconds", "status"]
    rows: list[Sequence[str]] = []
    for case in report.cases:
        rows.append(
            [case.id, case.scenario, *(_cell(case.score(m)) for m in METRICS),
             str(case.tokens), f"{case.cost:g}", f"{case.latency_ms / 1000:.2f}", case.status]
        )  # fmt: skip
    summary = report.summary()
    rows.append(
        ["total", f"{summary['cases']} case(s)",
         *(f"{summary['metrics'][m]['passed']}/{summary['metrics'][m]['applicable']}"
           for m in METRICS),
         str(summary["tokens"]), f"{summary['cost']:g}", f"{summary['seconds']:.2f}",
         f"{summary['succeeded']} succeeded"]
    )  # fmt: skip
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    lines = [f"suite {report.suite}, planner {report.planner}"]
    for row in [header, *rows]:
        lines.append("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)))
    for case in report.cases:
        for score in case.scores:
            if score.passed is False:
                lines.append(f"{case.id} {score.metric}: {score.detail}")
                lines.extend(f"    {problem}" for problem in score.problems)
    return "\n".join(line.rstrip() for line in lines) + "\n"
