"""What plans tell the floors above them, each sent after the change committed:

- ``version_approved`` (``version_id``, ``approver``, ``comment``): a person approved a
  version; runs resume the automatic replans waiting for it (``runs.replanning``), and
  the review loop tells its author (``reviews.notifications``).
- ``version_approval_counted`` (``version_id``, ``approver``): a person's approval was
  counted, but the version still waits for an approval rule (SPEC section 10); the review
  loop resolves the asks of people who can no longer bring it closer
  (``reviews.resolution``).
- ``version_rejected`` (``version_id``, ``reviewer``, ``comment``): a person rejected one.
- ``version_changes_requested`` (``version_id``, ``reviewer``, ``comment``): a person sent
  one back to its author.
- ``version_submitted`` (``version_id``, ``author``): a version that compiles now waits
  for review (saved as submitted, or a draft submitted later).
- ``version_superseded`` (``version_id``, ``newer_id``, ``actor``): a version that waited
  for review no longer does, since ``actor`` submitted the newer ``newer_id``.
"""

from __future__ import annotations

from django.dispatch import Signal

version_approved = Signal()
version_approval_counted = Signal()
version_rejected = Signal()
version_changes_requested = Signal()
version_submitted = Signal()
version_superseded = Signal()
