"""What the gateway tells the floors above it (``reviews``: the inbox, e-mails, webhooks),
sent after the change committed, never naming recipients:

- ``call_held(held_call_id, actor)``: a call was held and waits for people;
- ``call_decided(held_call_id, actor)``: a held call was approved (an approval counted,
  enough or not), rejected or expired: whoever was asked may no longer be needed.
"""

from __future__ import annotations

from django.db import transaction
from django.dispatch import Signal

__all__ = ["call_decided", "call_held", "send_after_commit"]

call_held = Signal()
call_decided = Signal()


def send_after_commit(signal: Signal, held_call_id: int, actor: str) -> None:
    # After commit: a receiver reads the held call as it was decided, and a rollback
    # tells nobody.
    transaction.on_commit(lambda: signal.send(sender=None, held_call_id=held_call_id, actor=actor))
