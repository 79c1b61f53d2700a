"""The evaluations router: store a report of ``forge eval`` and read them back.

Uploading needs ``evaluation.upload`` (authors and operators), reading
``evaluation.view`` (every role). A report that is not ``forge.eval-report/v1`` is a
400 ``invalid_report`` naming the place. Writes go through ``evaluations.services``.

No ``from __future__ import annotations`` here: ninja reads the operations' annotations
at runtime, and ``@paginate`` hides this module's names from string annotations.
"""

from typing import Annotated, Any

from django.http import HttpRequest
from django.shortcuts import get_object_or_404
from ninja import Body, Path, Router, Status
from ninja.pagination import paginate

from accounts.permissions import require_permission
from evaluations import services
from evaluations.models import Evaluation
from evaluations.schemas import EvaluationDetailOut, EvaluationOut
from forge.ids import MAX_ID

router = Router(tags=["evaluations"])

EvaluationId = Annotated[int, Path(ge=1, le=MAX_ID, example=1)]


@router.post("/evaluations", response={201: EvaluationOut})
@require_permission("evaluation.upload")
def upload_evaluation(request: HttpRequest, report: Body[dict[str, Any]]) -> Status:
    """Store a report (``forge eval --json`` prints one; ``--report-to`` uploads it)."""
    return Status(201, services.store_report(request.auth, report))  # type: ignore[attr-defined]


@router.get("/evaluations", response=list[EvaluationOut])
@require_permission("evaluation.view")
@paginate
def list_evaluations(request: HttpRequest) -> Any:
    """Reports, newest first, without their cases."""
    return Evaluation.objects.select_related("uploaded_by").defer("report")


@router.get("/evaluations/{evaluation_id}", response=EvaluationDetailOut)
@require_permission("evaluation.view")
def get_evaluation(request: HttpRequest, evaluation_id: EvaluationId) -> Evaluation:
    """One report, whole."""
    return get_object_or_404(Evaluation.objects.select_related("uploaded_by"), pk=evaluation_id)
