"""The API token format: ``forge_<prefix>_<secret>``, of which only a digest is stored.

The prefix (12 hex digits) is stored in clear and indexed, so a presented token is found
with one lookup and named in lists without revealing it; the secret (43 URL-safe
characters, 256 bits) is stored only as its SHA-256 digest. A plain hash suffices here,
unlike for passwords: the secret is random and long, so there is nothing to brute-force.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from dataclasses import dataclass

TOKEN_PATTERN = re.compile(r"forge_(?P<prefix>[0-9a-f]{12})_(?P<secret>[A-Za-z0-9_-]{43})")


@dataclass(frozen=True)
class NewToken:
    prefix: str
    secret: str

    @property
    def value(self) -> str:
        """The whole token, as given to its owner once."""
        return f"forge_{self.prefix}_{self.secret}"

    @property
    def digest(self) -> str:
        return digest(self.secret)


def generate() -> NewToken:
    return NewToken(prefix=secrets.token_hex(6), secret=secrets.token_urlsafe(32))


def parse(value: str) -> tuple[str, str] | None:
    """Split a presented token into (prefix, secret), or None if it is not one of ours."""
    match = TOKEN_PATTERN.fullmatch(value.strip())
    return (match["prefix"], match["secret"]) if match else None


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode("ascii")).hexdigest()
