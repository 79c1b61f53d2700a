"""Keep secrets out of what people and the audit trail see: ``redact(value)`` before a payload
is hashed, a preview is shown, or free text is stored.

A value is replaced with ``"[redacted]"`` when its key names a secret, at any depth and
in any case: keys containing password, passwd, secret, api_key, apikey, authorization,
cookie or private_key, and keys that are ``token`` or end in ``_token`` (so access_token
and csrf_token go, but max_tokens, a budget, stays).

Inside any other string (an argument, an approval comment, a version note), text that
looks like a credential is replaced by ``[redacted]`` and the rest of the string kept:

- Forge API tokens (``forge_<prefix>_<secret>``) and ``Bearer <credential>``,
- AWS access key ids (``AKIA...``, ``ASIA...``), GitHub tokens (``ghp_``, ``gho_``,
  ``ghu_``, ``ghs_``, ``ghr_``, ``github_pat_``), Slack tokens (``xoxb-`` ...), OpenAI-style
  keys (``sk-...``), JSON Web Tokens (three base64url segments, the first ``eyJ...``),
- PEM private key blocks, whole (to the end of the text when the END line is missing),
- the password of a URL (``scheme://user:[redacted]@host``),
- the value of an assignment whose name is a secret key by the rule above
  (``password=...``, ``DB_PASSWORD: ...``, ``"api_key": "..."``, ``token=...``): the
  name is kept, so a reader still sees what was there.

The patterns ask for the shape of each credential (prefix and length), because a false
positive hides what a reviewer needed to read: ``max_tokens: 5`` and ``sk-learn`` stay.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

__all__ = ["REDACTED", "is_secret_key", "redact", "redact_text"]

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

# Credentials known by their shape, replaced whole. Case matters for the prefixes
# (AKIA, ghp_, xoxb-, sk-, eyJ): in another case they are prose, not keys.
_KEY_SHAPES = re.compile(
    "|".join(
        (
            # PEM private keys (RSA, EC, OPENSSH, ENCRYPTED, PKCS#8), to the END line or,
            # when a copy was cut short, to the end of the text.
            r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----"
            r"(?:.*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY-----|.*\Z)",
            r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b",
            r"\bgh[pousr]_[A-Za-z0-9]{30,}",
            r"\bgithub_pat_[A-Za-z0-9_]{30,}",
            r"\bxox[abprs]-[A-Za-z0-9-]{10,}",
            # OpenAI-style: sk-, sk-proj-, sk-ant-...; random keys hold digits, words don't.
            r"\bsk-(?=[A-Za-z0-9_-]*[0-9])[A-Za-z0-9_-]{20,}",
            r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*",
        )
    ),
    re.DOTALL,
)
# Forge's own API tokens and "Bearer <value>" in any case.
_FORGE_AND_BEARER = re.compile(
    r"\bforge_[0-9a-f]{8,}_[A-Za-z0-9_-]{16,}|\bbearer\s+[A-Za-z0-9._~+/=-]+", re.IGNORECASE
)

# scheme://user:password@host: only the password goes, the user and host stay readable.
_URL_PASSWORD = re.compile(r"\b([a-z][a-z0-9+.-]*://[^/\s:@]+:)([^/\s@]+)(@)", re.IGNORECASE)

# name = value, name: value, "name": "value": the value goes when the name is a secret
# key. A value is a quoted string, or a run up to whitespace or a separator (, ; & and
# quotes), optionally after an auth scheme ("Authorization: Basic abc").
_ASSIGNMENT = re.compile(
    r"""(?P<name>(?P<quote>["']?)\b[A-Za-z][A-Za-z0-9_.-]*(?P=quote))"""
    r"""(?P<sep>[ \t]*[:=][ \t]*)"""
    r"""(?P<value>"[^"\n]*"|'[^'\n]*'|(?:(?:bearer|basic|digest|token)[ \t]+)?[^\s,;&'"]+)""",
    re.IGNORECASE,
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
        return redact_text(value)
    return value


def redact_text(text: str) -> str:
    """``text`` with every credential the module docstring lists replaced by ``[redacted]``."""
    text = _KEY_SHAPES.sub(REDACTED, text)
    text = _FORGE_AND_BEARER.sub(REDACTED, text)
    text = _URL_PASSWORD.sub(lambda m: m.group(1) + REDACTED + m.group(3), text)
    return _redact_assignments(text)


def _redact_assignments(text: str) -> str:
    # A scan rather than re.sub: after a name that is not a secret's, the scan goes on
    # right after its separator, so that its "value" may still be an assignment that
    # is ("failed: password=x", 'note="token=y"').
    parts, position = [], 0
    while match := _ASSIGNMENT.search(text, position):
        name, value = match.group("name"), match.group("value")
        if is_secret_key(name.strip("\"'")):
            quote = value[0] if value[0] in "\"'" else ""
            parts.append(text[position : match.start("value")] + quote + REDACTED + quote)
            position = match.end()
        else:
            parts.append(text[position : match.end("sep")])
            position = match.end("sep")
    parts.append(text[position:])
    return "".join(parts)
