"""The headers every request of a client carries: the bearer token and who is asking."""

from __future__ import annotations

__all__ = ["USER_AGENT", "request_headers"]

USER_AGENT = "forge-client/1"


def request_headers(token: str) -> dict[str, str]:
    """``Authorization: Bearer <token>`` (surrounding whitespace dropped, as a token read
    from a file or an environment variable often has), ``Accept`` and ``User-Agent``."""
    value = token.strip()
    if not value:
        raise ValueError("an API token is needed (manage.py forge_user NAME --token makes one)")
    if any(c.isspace() for c in value):
        raise ValueError("an API token has no whitespace inside; check how it was copied")
    return {
        "Authorization": f"Bearer {value}",
        "Accept": "application/json",
        "User-Agent": USER_AGENT,
    }
