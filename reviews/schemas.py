"""API shapes of review threads and comments (``reviews.api``)."""

from __future__ import annotations

from datetime import datetime

from ninja import Field, Schema

from plans.schemas import Text
from reviews.models import MAX_COMMENT

STEP_ID_PATTERN = r"^[A-Za-z0-9_.-]{1,64}$"  # forge.plan.limits.ID_PATTERN


class CommentOut(Schema):
    id: int
    author: str
    body: str
    created_at: datetime


class ThreadOut(Schema):
    id: int
    version: int = Field(description="the number of the version the thread was opened on")
    version_id: int
    step_id: str = Field(description="the step commented on; empty for the whole version")
    opened_by: str
    created_at: datetime
    resolved: bool
    resolved_by: str
    resolved_at: datetime | None
    outdated: bool = Field(description="the step changed or was removed since the thread's version")
    outdated_reason: str = Field(description="'changed', 'removed' or ''")
    carried: bool = Field(description="opened on an earlier version and carried over")
    comments: list[CommentOut]


class ThreadsOut(Schema):
    version: int
    version_id: int
    status: str
    threads: list[ThreadOut]
    open: int = Field(description="threads neither resolved nor outdated")


class ThreadIn(Schema):
    body: Text = Field(min_length=1, max_length=MAX_COMMENT)
    step_id: str = Field("", pattern=r"^$|" + STEP_ID_PATTERN, description="'' for the version")


class ReplyIn(Schema):
    body: Text = Field(min_length=1, max_length=MAX_COMMENT)


class SubmittedOut(Schema):
    plan: int
    version: int
    version_id: int
    status: str
    submitted: bool
