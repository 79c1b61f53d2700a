"""API shapes of evaluation reports."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.urls import reverse
from ninja import Schema

from evaluations.models import Evaluation


class EvaluationOut(Schema):
    id: int
    suite: str
    planner: str
    model: str
    uploaded_by: str
    created_at: datetime
    cases: int
    succeeded: int
    success_rate: float
    url: str

    @staticmethod
    def resolve_uploaded_by(obj: Evaluation) -> str:
        return obj.uploaded_by.get_username()

    @staticmethod
    def resolve_url(obj: Evaluation) -> str:
        return reverse("evaluations:detail", args=[obj.pk])


class EvaluationDetailOut(EvaluationOut):
    report: dict[str, Any]
