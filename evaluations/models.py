"""Evaluation reports uploaded by ``forge eval --report-to`` (``forge.evaluation``).

A report is kept whole, as the core wrote it (``forge.eval-report/v1``), with the few
fields lists and the compare page sort and filter by beside it. Reports are never
changed once stored: a new run of ``forge eval`` uploads a new one.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models


class Evaluation(models.Model):
    suite = models.CharField(max_length=64)
    planner = models.CharField(max_length=300)
    model = models.CharField(max_length=200, blank=True)
    uploaded_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="evaluations"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    cases = models.PositiveIntegerField()
    succeeded = models.PositiveIntegerField()
    report = models.JSONField()

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["suite", "-created_at"])]

    def __str__(self) -> str:
        return f"{self.suite} · {self.planner}"

    @property
    def success_rate(self) -> float:
        return self.succeeded / self.cases if self.cases else 0.0
