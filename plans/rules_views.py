"""The Rules page (admins): the approval rules in force, each change waiting for a
second admin with its diff, and a form to propose a change (``plans.rules_changes``)."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST

from accounts.permissions import ensure_permission
from forge.rules import RulesInvalid
from plans import rules_changes
from plans.models import RulesVersion
from plans.rules import rules_in_force


@never_cache
@require_http_methods(["GET", "POST"])
def rules_page(request: HttpRequest) -> HttpResponse:
    ensure_permission(request.user, rules_changes.PERMISSION)
    status, error, text = 200, None, None
    if request.method == "POST":
        text = request.POST.get("text", "")
        try:
            version = rules_changes.propose_rules(
                text, request.user, request.POST.get("comment", "")
            )
        except RulesInvalid as exc:
            status, error = 400, {"message": str(exc), "line": exc.line, "field": exc.field,
                                  "code": exc.code}  # fmt: skip
        else:
            messages.success(
                request, f"Rules version {version.number} saved: a second admin must approve it."
            )
            return redirect("plans:rules")
    number, _ = rules_in_force()
    context = {
        "in_force": number,
        "in_force_text": rules_changes.text_in_force(),
        "versions": rules_changes.versions_view(),
        "text": text if text is not None else rules_changes.text_in_force(),
        "error": error,
    }
    return render(request, "plans/rules.html", context, status=status)


@require_POST
def approve_rules(request: HttpRequest, number: int) -> HttpResponse:
    ensure_permission(request.user, rules_changes.PERMISSION)
    version = get_object_or_404(RulesVersion, number=number)
    try:
        rules_changes.approve_rules(version, request.user, request.POST.get("comment", ""))
    except (RulesInvalid, rules_changes.RulesChangeRefused) as exc:
        messages.error(request, str(exc))
    except PermissionDenied as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"Rules version {number} is in force.")
    return redirect("plans:rules")
