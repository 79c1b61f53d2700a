"""Access tokens of Forge's OAuth 2.1 server (django-oauth-toolkit) as bearer tokens.

A token that an MCP host obtained with a person's consent acts as that person: the same
roles, the same refusals, the same audit trail as the person's API token. It must carry
the ``mcp`` scope, belong to a user who is still active and not have expired; a revoked
token is gone from the table (the library deletes it), so it is unknown. Tokens without
a user (the registration tokens of RFC 7591) never act as anyone.
"""

from __future__ import annotations

import hashlib

from oauth2_provider.models import AccessToken

__all__ = ["MCP_SCOPE", "live_access_token"]

MCP_SCOPE = "mcp"


def live_access_token(value: str) -> AccessToken | None:
    """The unexpired ``mcp``-scoped access token ``value`` names, with its active user,
    or None."""
    checksum = hashlib.sha256(value.encode("utf-8")).hexdigest()
    token = (
        AccessToken.objects.select_related("user", "application")
        .filter(token_checksum=checksum)
        .first()
    )
    if token is None or token.user is None or not token.user.is_active:
        return None
    return token if token.is_valid([MCP_SCOPE]) else None
