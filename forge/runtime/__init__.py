"""The acting side of the core: scheduler, ToolExecutor, run state and events, local runs."""

from forge.runtime.approvals import ApprovalRefused, ApprovalSigner, ApprovalToken
from forge.runtime.events import EventType, RunEvent
from forge.runtime.executor import ToolExecutor
from forge.runtime.records import ExecutionRecord, ExecutionRecordStore, InMemoryRecordStore
from forge.runtime.results import ToolResult
from forge.runtime.scheduler import Scheduler, TransitionRefused, approval_hash
from forge.runtime.state import RunState, StepState, apply_event, rebuild
from forge.runtime.status import RUN_STATUSES, STEP_STATUSES, RunStatus, StepStatus

__all__ = [
    "RUN_STATUSES",
    "STEP_STATUSES",
    "ApprovalRefused",
    "ApprovalSigner",
    "ApprovalToken",
    "EventType",
    "ExecutionRecord",
    "ExecutionRecordStore",
    "InMemoryRecordStore",
    "RunEvent",
    "RunState",
    "RunStatus",
    "Scheduler",
    "StepState",
    "StepStatus",
    "ToolExecutor",
    "ToolResult",
    "TransitionRefused",
    "apply_event",
    "approval_hash",
    "rebuild",
]
