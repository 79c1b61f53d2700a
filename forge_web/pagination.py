"""The API's one pagination: ninja's page numbers, with the page number bounded.

An unbounded ``?page=`` would turn into an SQL OFFSET that overflows the database's
64-bit integers (a 500 instead of an empty page); a billion pages of any size Forge
allows stay far inside them.
"""

from __future__ import annotations

from ninja import Field, Schema
from ninja.pagination import PageNumberPagination as NinjaPageNumberPagination

MAX_PAGE = 1_000_000_000


class PageNumberPagination(NinjaPageNumberPagination):
    class Input(Schema):
        page: int = Field(1, ge=1, le=MAX_PAGE)
        page_size: int | None = Field(None, ge=1, description="at most FORGE_API_PAGE_SIZE")
