"""Previews: what a call will do, shown to a person before it does it (SPEC section 5,
"writes are preview, then commit").

A runner that can say more than its arguments offers ``preview(tool, args, context)``:
``file_write`` a unified diff against the workspace file, ``http_request`` the exact
request with secret headers masked, ``shell`` the argv, the names (never the values) of
its environment and where it runs, an MCP tool its server, arguments and annotations.
Every other call is previewed as its tool and arguments. Secrets are masked with the
audit trail's rules (``forge.redaction``). A preview is a pure function of the call and
the files it reads, so computing it twice gives the same ``hash`` unless something
changed: an approval binds that hash, and the executor refuses a call whose preview
changed by the time it runs.

A preview may carry the ``refusal`` its runner will give the call (``http_request`` to a
host off the allow list): such a call cannot run, so its preview is not ``runnable`` and
nobody can approve it (``forge.runtime.scheduler``); the approver is shown the refusal
and what to change instead. The refusal is part of the hash, so a call whose host was
allowed when approved and is refused by the time it runs comes back to a person.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from forge.redaction import redact
from forge.runners.base import Artifact
from forge.tools.spec import CallRefusal

__all__ = ["CallPreview", "arguments_preview", "json_text"]


@dataclass(frozen=True)
class CallPreview:
    """``kind`` names what was previewed (``file_write``, ``http_request``, ``shell``,
    ``mcp``, ``call``, ``agent``, or ``error`` when the call cannot be previewed);
    ``summary`` is one line for lists, ``text`` the whole of it for the approver;
    ``refusal`` why the call will be refused, if it will."""

    kind: str
    summary: str
    text: str
    refusal: CallRefusal | None = None

    @property
    def runnable(self) -> bool:
        """Whether the call can run at all: a refused one can never be approved."""
        return self.refusal is None

    @property
    def hash(self) -> str:
        refused = self.refusal
        tail = "" if refused is None else f"\0{refused.code}\0{refused.reason}"
        return hashlib.sha256(f"{self.kind}\0{self.text}{tail}".encode()).hexdigest()

    @property
    def artifact(self) -> Artifact:
        return Artifact("preview", "text/plain", self.text.encode())

    def to_data(self) -> dict[str, Any]:
        """``{kind, summary, text, hash, runnable}``, and ``refusal`` (``{code, reason,
        hint}``) when the call will be refused."""
        data: dict[str, Any] = {
            "kind": self.kind,
            "summary": self.summary,
            "text": self.text,
            "hash": self.hash,
            "runnable": self.runnable,
        }
        if self.refusal is not None:
            data["refusal"] = self.refusal.to_data()
        return data

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> CallPreview:
        refusal = data.get("refusal")
        return cls(
            str(data["kind"]),
            str(data["summary"]),
            str(data["text"]),
            CallRefusal.from_data(refusal) if isinstance(refusal, Mapping) else None,
        )


def json_text(value: Any) -> str:
    """``value`` as stable, readable JSON with secrets masked."""
    return json.dumps(redact(value), indent=2, sort_keys=True, ensure_ascii=False, default=str)


def arguments_preview(tool_name: str, args: Mapping[str, Any]) -> CallPreview:
    """The preview of a call whose runner has nothing better to say: tool and arguments."""
    return CallPreview(
        "call", f"{tool_name} with {len(args)} argument(s)", f"{tool_name}\n{json_text(args)}"
    )
