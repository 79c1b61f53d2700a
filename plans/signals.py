"""What plans tell the floors above them, each sent after the change committed:

- ``version_approved`` (``version_id``, ``approver``, ``comment``): a person approved a
  version; runs resume the automatic replans waiting for it (``runs.replanning``), and
  the review loop tells its author (``reviews.notifications``).
- ``version_rejected`` (``version_id``, ``reviewer``, ``comment``): a person rejected one.
- ``version_submitted`` (``version_id``, ``author``): a version that compiles now waits
  for review (saved as submitted, or a draft submitted later).
"""

from __future__ import annotations

from django.dispatch import Signal

version_approved = Signal()
version_rejected = Signal()
version_submitted = Signal()
