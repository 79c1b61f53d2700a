"""What one tool call gave back, normalised: the ToolExecutor's answer to the scheduler."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from forge.runners.base import Artifact

__all__ = ["ToolResult", "artifact_refs"]


def artifact_refs(record_id: str, artifacts: Iterable[Artifact]) -> tuple[dict[str, Any], ...]:
    """How events name the artifacts an execution record keeps (logs, diffs, previews):
    enough to list and fetch them, never their content."""
    return tuple(
        {
            "name": a.name,
            "media_type": a.media_type,
            "size": len(a.content),
            "truncated": a.truncated,
            "record": record_id,
        }
        for a in artifacts
    )


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
    # The artifacts of the call (``artifact_refs``); an agent step's are its calls'.
    artifacts: tuple[Mapping[str, Any], ...] = ()

    @property
    def succeeded(self) -> bool:
        return self.status == "succeeded"
