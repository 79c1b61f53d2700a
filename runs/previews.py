"""What a step waiting for approval will do, made ready for a server-rendered page: the
preview its ``step_awaiting_approval`` event carries (``{kind, summary, text, hash,
runnable}`` and a ``refusal`` when its call will be refused,
``forge.runners.preview.CallPreview``) with a label, a short hash and its lines, each
with the kind the page colours it by. ``static/forge/js/model/preview.js`` does the same
for the run page's script; keep the two in step.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = [
    "BINDS_SENTENCE",
    "CHANGED_SENTENCE",
    "REFUSED_SENTENCE",
    "diff_line_kind",
    "preview_lines",
    "preview_view",
    "refusal_of",
]

LABELS = {
    "file_write": "File write",
    "http_request": "HTTP request",
    "shell": "Shell command",
    "mcp": "MCP tool call",
    "call": "Tool call",
    "agent": "Agent step: what it may call",
    "error": "No preview",
}
BINDS_SENTENCE = (
    "Approving binds exactly this preview: if what the step will do changes before it "
    "runs, it comes back for a new approval."
)
CHANGED_SENTENCE = "What this step will do changed since you looked: review the new preview."
REFUSED_SENTENCE = (
    "This call cannot run, so it cannot be approved. Reject it to replan the run, or "
    "change the setting and start a new run."
)


def diff_line_kind(line: str, in_hunk: bool = True) -> str:
    """One line of a unified diff: ``hunk``, ``meta`` (a header before the first hunk, or
    a ``\\ No newline`` note), ``add``, ``del`` or ``text``."""
    if line.startswith("@@"):
        return "hunk"
    if not in_hunk or line.startswith("\\"):
        return "meta"
    if line.startswith("+"):
        return "add"
    if line.startswith("-"):
        return "del"
    return "text"


def preview_lines(preview: Mapping[str, Any]) -> list[dict[str, str]]:
    """The preview's text as lines; only a ``file_write`` diff's lines get diff kinds."""
    text = preview.get("text")
    lines = (text if isinstance(text, str) else "").removesuffix("\n").split("\n")
    if preview.get("kind") != "file_write":
        return [{"kind": "text", "text": line} for line in lines]
    found: list[dict[str, str]] = []
    in_hunk = False
    for line in lines:
        in_hunk = in_hunk or line.startswith("@@")
        found.append({"kind": diff_line_kind(line, in_hunk), "text": line})
    return found


def preview_view(preview: Any) -> dict[str, Any] | None:
    """The preview as a page shows it, or ``None`` when the event carried none."""
    if not isinstance(preview, Mapping) or not preview.get("hash"):
        return None
    kind = str(preview.get("kind", ""))
    digest = str(preview["hash"])
    return {
        "kind": kind,
        "label": LABELS.get(kind, kind or "Preview"),
        "summary": str(preview.get("summary", "")),
        "text": str(preview.get("text", "")),
        "hash": digest,
        "short_hash": digest[:12],
        "warning": kind == "error",
        "lines": preview_lines(preview),
        "binds": BINDS_SENTENCE,
        "refusal": refusal_of(preview),
        "refused": REFUSED_SENTENCE,
    }


def refusal_of(preview: Mapping[str, Any]) -> dict[str, str] | None:
    """``{code, reason, hint}`` of a preview whose call will be refused (``runnable``
    false), or ``None``: such a step is never offered for approval."""
    if preview.get("runnable", True) is not False:
        return None
    refusal = preview.get("refusal")
    data = refusal if isinstance(refusal, Mapping) else {}
    return {key: str(data.get(key, "")) for key in ("code", "reason", "hint")}
