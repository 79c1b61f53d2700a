"""The one writer of evaluations: check an uploaded report with the core, store it, and
write the audit event, in one transaction."""

from __future__ import annotations

from typing import Any

from django.db import transaction

from audit import services as audit
from evaluations.models import Evaluation
from forge.evaluation import SuiteReport

__all__ = ["store_report"]


def store_report(user: Any, data: Any) -> Evaluation:
    """Store the report ``data`` uploaded by ``user``. Raises ``ReportInvalid``
    (``invalid_report``) for anything that is not a ``forge.eval-report/v1`` report;
    the summary is computed again from the cases, never taken from the upload."""
    report = SuiteReport.from_data(data)
    summary = report.summary()
    with transaction.atomic():
        evaluation = Evaluation.objects.create(
            suite=report.suite,
            planner=report.planner,
            model=report.model,
            uploaded_by=user,
            cases=summary["cases"],
            succeeded=summary["succeeded"],
            report=report.to_data(),
        )
        audit.record(
            user.get_username(),
            "evaluation.upload",
            "evaluation",
            evaluation.pk,
            {
                "suite": report.suite,
                "planner": report.planner,
                "model": report.model,
                "cases": summary["cases"],
                "succeeded": summary["succeeded"],
            },
        )
    return evaluation
