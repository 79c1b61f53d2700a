"""What plans tell the floors above them: ``version_approved`` is sent (after commit)
when a person approves a version, with ``version_id`` and ``approver``; runs resume the
automatic replans waiting for it (``runs.replanning``)."""

from __future__ import annotations

from django.dispatch import Signal

version_approved = Signal()
