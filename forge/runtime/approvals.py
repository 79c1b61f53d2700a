"""Approval tokens: proof that a person approved one step of one run with exactly these
arguments and this preview. The token is an HMAC over run id, step id, the arguments'
hash, the preview's hash and the approver, so it cannot be forged without the key, moved
to other arguments, or kept when what the call will do changed (a file edited since its
diff was shown).

``ApprovalSigner`` also signs plan-version approvals for ``forge.runtime.gate``; each
kind of message starts with its own label, so a signature of one kind never verifies as
the other.
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass

from forge.errors import ForgeError

__all__ = ["ApprovalRefused", "ApprovalSigner", "ApprovalToken"]


class ApprovalRefused(ForgeError, PermissionError):
    code = "approval_required"


@dataclass(frozen=True)
class ApprovalToken:
    run_id: str
    step_id: str
    args_hash: str
    approver: str
    signature: str
    preview_hash: str = ""


class ApprovalSigner:
    def __init__(self, key: bytes) -> None:
        if len(key) < 16:
            raise ValueError("an approval key needs at least 16 bytes")
        self._key = key

    def sign(self, label: str, *fields: str) -> str:
        """The HMAC of ``fields`` under ``label`` (one label per kind of approval)."""
        message = "\x1f".join((label, *fields)).encode()
        return hmac.new(self._key, message, hashlib.sha256).hexdigest()

    def matches(self, signature: str, label: str, *fields: str) -> bool:
        return hmac.compare_digest(self.sign(label, *fields), signature)

    def issue(
        self, run_id: str, step_id: str, args_hash: str, approver: str, preview_hash: str = ""
    ) -> ApprovalToken:
        signature = self.sign("step", run_id, step_id, args_hash, preview_hash, approver)
        return ApprovalToken(run_id, step_id, args_hash, approver, signature, preview_hash)

    def verify(
        self,
        token: ApprovalToken | None,
        run_id: str,
        step_id: str,
        args_hash: str,
        preview_hash: str | None = None,
    ) -> None:
        """Raise ``ApprovalRefused`` unless ``token`` approves exactly this call; with
        ``preview_hash``, also exactly what the call will now do (``preview_changed``)."""
        if token is None:
            raise ApprovalRefused(f"step {step_id!r} needs an approval token")
        if (token.run_id, token.step_id) != (run_id, step_id):
            raise ApprovalRefused(
                f"the approval token is for another step, not {step_id!r}", code="approval_mismatch"
            )
        if token.args_hash != args_hash:
            raise ApprovalRefused(
                f"step {step_id!r} was approved with other arguments; approve these again",
                code="approval_mismatch",
            )
        if not self.matches(
            token.signature,
            "step",
            run_id,
            step_id,
            args_hash,
            token.preview_hash,
            token.approver,
        ):
            raise ApprovalRefused(
                "the approval token's signature is invalid", code="approval_invalid"
            )
        if preview_hash is not None and token.preview_hash != preview_hash:
            raise ApprovalRefused(
                f"what step {step_id!r} will do changed since it was approved (its preview "
                "differs now); approve the new preview",
                code="preview_changed",
            )
