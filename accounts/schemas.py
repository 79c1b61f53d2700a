"""API shapes of accounts: the caller, and API tokens."""

from __future__ import annotations

from datetime import datetime

from ninja import Field, Schema
from pydantic import field_validator


class MeOut(Schema):
    id: int
    username: str
    roles: list[str] = Field(description="roles held")
    effective_roles: list[str] = Field(description="roles acted with: admin implies all")
    permissions: list[str] = Field(description="what the caller may do (accounts.roles)")
    teams: list[str] = Field(description="the teams the caller is in (approval rules)")
    auth: str = Field(
        description="'token' (an API token), 'oauth' (an MCP host's OAuth token) or 'session'"
    )


class TokenIn(Schema):
    name: str = Field(min_length=1, max_length=100)

    @field_validator("name")
    @classmethod
    def _storable(cls, value: str) -> str:
        # PostgreSQL text cannot hold NUL, no database a lone surrogate: a 422, not a 500.
        if "\x00" in value or any("\ud800" <= char <= "\udfff" for char in value):
            raise ValueError("may not contain NUL characters or lone surrogates")
        return value


class TokenOut(Schema):
    id: int
    name: str
    prefix: str
    created_at: datetime
    last_used_at: datetime | None
    revoked_at: datetime | None


class NewTokenOut(TokenOut):
    token: str = Field(description="the token itself; shown this once, never again")
