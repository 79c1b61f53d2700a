"""Progress of a local run as a person reads it: one line per finished step, and on a
terminal a status line rewritten in place showing what runs now."""

from __future__ import annotations

from typing import TextIO

from forge.runtime.events import EventType, RunEvent

__all__ = ["ProgressPrinter"]

_STEP_LINES = {
    EventType.STEP_SUCCEEDED: "ok       ",
    EventType.STEP_FAILED: "FAILED   ",
    EventType.STEP_INVALID: "INVALID  ",
    EventType.STEP_RETRIED: "retry    ",
    EventType.STEP_AWAITING_APPROVAL: "waiting  ",
    EventType.STEP_APPROVED: "approved ",
    EventType.STEP_REJECTED: "rejected ",
    EventType.STEP_NEEDS_RECONCILIATION: "reconcile",
    EventType.STEP_CANCELLED: "cancelled",
}


class ProgressPrinter:
    def __init__(self, stream: TextIO, total_steps: int, *, live: bool) -> None:
        self.stream = stream
        self.total = total_steps
        self.live = live
        self.done = 0
        self.running: list[str] = []

    def __call__(self, event: RunEvent) -> None:
        kind = event.event_type
        if kind == EventType.STEP_STARTED and event.step_id:
            self.running.append(event.step_id)
        elif event.step_id in self.running and kind != EventType.STEP_STARTED:
            self.running.remove(event.step_id)
        if kind == EventType.STEP_SUCCEEDED:
            self.done += 1
        if kind == EventType.RUN_RESUMED and isinstance(event.facts, dict):
            self.total = len(event.facts.get("steps", ()))
            self.done = len(event.facts.get("preserved", ()))
        line = self._line(event)
        if line is not None:
            self._clear()
            self.stream.write(line + "\n")
        self._status()
        self.stream.flush()

    def _line(self, event: RunEvent) -> str | None:
        label = _STEP_LINES.get(event.event_type)
        if label is not None and event.step_id is not None:
            detail = f"  {event.blocked_reason}" if event.blocked_reason else ""
            timing = f" ({event.latency_ms:.0f} ms)" if event.latency_ms else ""
            return f"  {label} {event.step_id}{timing}{detail}"
        if event.event_type == EventType.STEP_STARTED and not self.live:
            return f"  started   {event.step_id}"
        if event.step_id is None and event.transition is not None:
            reason = f": {event.blocked_reason}" if event.blocked_reason else ""
            return f"run {event.transition[1]} (v{event.plan_version}){reason}"
        return None

    def _status(self) -> None:
        if self.live and self.running:
            text = f"[{self.done}/{self.total}] running {', '.join(self.running)}"
            self.stream.write("\r\x1b[K" + text)

    def _clear(self) -> None:
        if self.live:
            self.stream.write("\r\x1b[K")

    def finish(self) -> None:
        self._clear()
        self.stream.flush()
