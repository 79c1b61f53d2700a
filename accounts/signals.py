"""Signals that announce every change to accounts, so that a higher floor can audit them.

accounts and audit are sibling floors and must not import each other, so accounts only
says what happened; ``forge_web.apps`` connects ``account_changed`` to ``audit.record``.
It is sent synchronously inside the change's transaction: a receiver that fails rolls
the change back, and the audit row commits with it.

``account_changed`` arguments: ``actor`` (a username, or "<kind>:<name>" for a
non-person such as "cli:forge_user"), ``action`` (past tense: "user.created"),
``object_type``, ``object_id`` (strings) and ``payload`` (a JSON-able dict).
"""

from __future__ import annotations

from django.dispatch import Signal

account_changed = Signal()
