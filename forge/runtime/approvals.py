"""Approval tokens: proof that a person approved one step of one run with exactly these
arguments. The token is an HMAC over run id, step id, arguments' hash and approver, so
it cannot be forged without the key or moved to other arguments."""

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


class ApprovalSigner:
    def __init__(self, key: bytes) -> None:
        if len(key) < 16:
            raise ValueError("an approval key needs at least 16 bytes")
        self._key = key

    def _sign(self, run_id: str, step_id: str, args_hash: str, approver: str) -> str:
        message = "\x1f".join((run_id, step_id, args_hash, approver)).encode()
        return hmac.new(self._key, message, hashlib.sha256).hexdigest()

    def issue(self, run_id: str, step_id: str, args_hash: str, approver: str) -> ApprovalToken:
        signature = self._sign(run_id, step_id, args_hash, approver)
        return ApprovalToken(run_id, step_id, args_hash, approver, signature)

    def verify(
        self, token: ApprovalToken | None, run_id: str, step_id: str, args_hash: str
    ) -> None:
        """Raise ``ApprovalRefused`` unless ``token`` approves exactly this call."""
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
        expected = self._sign(run_id, step_id, args_hash, token.approver)
        if not hmac.compare_digest(expected, token.signature):
            raise ApprovalRefused(
                "the approval token's signature is invalid", code="approval_invalid"
            )
