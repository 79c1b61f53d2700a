"""What one tool call gave back, normalised: the ToolExecutor's answer to the scheduler."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["ToolResult"]


@dataclass(frozen=True)
class ToolResult:
    status: Literal["succeeded", "failed"]
    output: Any = None
    error: str = ""
    error_code: str = ""
    tokens: int = 0
    cost: float = 0.0
    latency_ms: float = 0.0
    model: str = ""
    record_id: str = ""

    @property
    def succeeded(self) -> bool:
        return self.status == "succeeded"
