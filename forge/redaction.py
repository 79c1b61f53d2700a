"""Keep secrets out of what people and the audit trail see: ``redact(value)`` before a payload
is hashed, a preview is shown, or free text is stored.

A value is replaced with ``"[redacted]"`` when its key names a secret, at any depth and
in any case: keys containing password, passwd, secret, api_key, apikey, authorization,
cookie or private_key, and keys that are ``token`` or end in ``_token`` (so access_token
and csrf_token go, but max_tokens, a budget, stays). Inside any other string, text that
looks like a Forge API token (``forge_<prefix>_<secret>``) or a bearer credential
(``Bearer <value>``) is replaced by ``[redacted]``, the rest of the string kept.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

__all__ = ["REDACTED", "is_secret_key", "redact"]

REDACTED = "[redacted]"

_SECRET_KEY_PARTS = (
    "password",
    "passwd",
    "secret",
    "api_key",
    "apikey",
    "authorization",
    "cookie",
    "private_key",
)
_SECRET_VALUE = re.compile(
    r"forge_[0-9a-f]{8,}_[A-Za-z0-9_-]{16,}|\bbearer\s+[A-Za-z0-9._~+/=-]+", re.IGNORECASE
)


def is_secret_key(key: object) -> bool:
    name = str(key).lower().replace("-", "_").replace(" ", "_")
    return (
        any(part in name for part in _SECRET_KEY_PARTS)
        or name == "token"
        or name.endswith("_token")
    )


def redact(value: Any) -> Any:
    """Return a copy of ``value`` (dicts, lists, tuples, strings, scalars) without secrets."""
    if isinstance(value, Mapping):
        return {
            key: REDACTED if is_secret_key(key) else redact(item) for key, item in value.items()
        }
    if isinstance(value, set | frozenset):
        return [redact(item) for item in sorted(value, key=repr)]  # a stable order
    if isinstance(value, list | tuple):
        return [redact(item) for item in value]
    if isinstance(value, str):
        return _SECRET_VALUE.sub(REDACTED, value)
    return value
