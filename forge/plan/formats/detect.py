"""Guess a plan source's format from its file name, else from its first characters.

Extensions win (``.json``, ``.yaml``/``.yml``, ``.mmd``/``.mermaid``). Without one, text
opening with ``{`` or ``[`` is JSON, a ``flowchart``/``graph`` header (after optional front
matter and ``%%`` comments) is Mermaid, and anything else is YAML, which is what a plan
written by hand most often is. DOT is recognised only to be refused: it is export-only.
"""

from __future__ import annotations

import re
from pathlib import PurePath

from forge.errors import PlanDocumentError

__all__ = ["detect_format"]

_EXTENSIONS = {".json": "json", ".yaml": "yaml", ".yml": "yaml", ".mmd": "mermaid",
               ".mermaid": "mermaid"}  # fmt: skip
_DOT_EXTENSIONS = {".dot", ".gv"}
_SNIFF_BYTES = 64 * 1024
_MERMAID_HEADER = re.compile(r"(flowchart|graph)(\s+(TD|TB|LR|RL|BT))?\s*(;|$)", re.IGNORECASE)
_DOT_HEADER = re.compile(r"(strict\s+)?(di)?graph\b[^\n{;]*\{", re.IGNORECASE)


def detect_format(source: str | bytes, filename: str | None = None) -> str:
    """``"json"``, ``"yaml"`` or ``"mermaid"``; raises ``PlanDocumentError`` with code
    ``unsupported_format`` for a DOT file, which Forge writes but does not read."""
    if filename:
        suffix = PurePath(filename).suffix.lower()
        if suffix in _EXTENSIONS:
            return _EXTENSIONS[suffix]
        if suffix in _DOT_EXTENSIONS:
            raise _dot_refused()
    head = source[:_SNIFF_BYTES]
    text = head.decode("utf-8", "replace") if isinstance(head, bytes) else head
    text = text.lstrip("\ufeff \t\r\n")
    if text.startswith(("{", "[")):
        return "json"
    if _is_mermaid(text):
        return "mermaid"
    if _DOT_HEADER.match(text):
        raise _dot_refused()
    return "yaml"


def _is_mermaid(text: str) -> bool:
    lines = [line.strip() for line in text.split("\n")]
    index = 0
    if lines and lines[0] == "---":
        closing = [i for i, line in enumerate(lines[1:], 1) if line == "---"]
        if not closing:
            return False
        index = closing[0] + 1
    for line in lines[index:]:
        if line and not line.startswith("%%"):
            return _MERMAID_HEADER.match(line) is not None
    return False


def _dot_refused() -> PlanDocumentError:
    return PlanDocumentError(
        "DOT is an export format; import JSON, YAML or a Mermaid flowchart",
        code="unsupported_format",
    )
