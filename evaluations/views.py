"""The evaluation pages: the reports uploaded by ``forge eval --report-to``, one report
case by case, and two reports side by side (two planners or models on one suite).
Every page needs ``evaluation.view`` (every role)."""

from __future__ import annotations

from django import forms
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET

from accounts.permissions import ensure_permission
from evaluations.compare import LABELS, compare
from evaluations.models import Evaluation
from forge.evaluation import METRICS, SuiteReport

PERMISSION = "evaluation.view"
PAGE_SIZE = 50


class CompareForm(forms.Form):
    a = forms.IntegerField(min_value=1, label="A")
    b = forms.IntegerField(min_value=1, label="B")


def _choices() -> list[Evaluation]:
    return list(Evaluation.objects.select_related("uploaded_by").defer("report")[:200])


@require_GET
def evaluation_list(request: HttpRequest) -> HttpResponse:
    ensure_permission(request.user, PERMISSION)
    evaluations = Evaluation.objects.select_related("uploaded_by").defer("report")
    page = Paginator(evaluations, PAGE_SIZE).get_page(request.GET.get("page"))
    return render(
        request,
        "evaluations/list.html",
        {"page": page, "choices": _choices(), "can_upload": request.user.can("evaluation.upload")},  # type: ignore[union-attr]
    )


@require_GET
def evaluation_detail(request: HttpRequest, evaluation_id: int) -> HttpResponse:
    ensure_permission(request.user, PERMISSION)
    evaluation = get_object_or_404(
        Evaluation.objects.select_related("uploaded_by"), pk=evaluation_id
    )
    report = SuiteReport.from_data(evaluation.report)
    rows = [
        {"case": case, "scores": [case.score(metric) for metric in METRICS]}
        for case in report.cases
    ]
    return render(
        request,
        "evaluations/detail.html",
        {
            "evaluation": evaluation,
            "report": report,
            "summary": report.summary(),
            "rows": rows,
            "labels": [LABELS[m] for m in METRICS],
        },
    )


@require_GET
def compare_page(request: HttpRequest) -> HttpResponse:
    ensure_permission(request.user, PERMISSION)
    form = CompareForm(request.GET or None)
    context: dict[str, object] = {"form": form, "choices": _choices()}
    if form.is_valid():
        a = get_object_or_404(
            Evaluation.objects.select_related("uploaded_by"), pk=form.cleaned_data["a"]
        )
        b = get_object_or_404(
            Evaluation.objects.select_related("uploaded_by"), pk=form.cleaned_data["b"]
        )
        context.update(
            a=a,
            b=b,
            same_suite=a.suite == b.suite,
            comparison=compare(SuiteReport.from_data(a.report), SuiteReport.from_data(b.report)),
        )
    status = 400 if form.is_bound and not form.is_valid() else 200
    return render(request, "evaluations/compare.html", context, status=status)
