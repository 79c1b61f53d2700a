"""API shapes of accounts: the caller, and API tokens."""

from __future__ import annotations

from datetime import datetime

from ninja import Field, Schema


class MeOut(Schema):
    id: int
    username: str
    roles: list[str] = Field(description="roles held")
    effective_roles: list[str] = Field(description="roles acted with: admin implies all")
    permissions: list[str] = Field(description="what the caller may do (accounts.roles)")
    auth: str = Field(description="'token' or 'session'")


class TokenIn(Schema):
    name: str = Field(min_length=1, max_length=100)


class TokenOut(Schema):
    id: int
    name: str
    prefix: str
    created_at: datetime
    last_used_at: datetime | None
    revoked_at: datetime | None


class NewTokenOut(TokenOut):
    token: str = Field(description="the token itself; shown this once, never again")
