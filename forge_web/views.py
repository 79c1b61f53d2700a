"""The home page (what needs the signed-in person: ``reviews.inbox.home_for``, the same
data as ``GET /api/v1/me/home``), and the JSON 404 for paths under /api/ that name no
operation."""

from __future__ import annotations

from django.contrib.auth.decorators import login_not_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.csrf import csrf_exempt

from reviews.inbox import home_for, unread_count


def home(request: HttpRequest) -> HttpResponse:
    user = request.user
    sections = home_for(user)
    context = {
        "sections": sections,
        "unread": unread_count(user),
        "needs_you": sum(
            s.count for s in sections if s.name in ("reviews", "steps", "reconcile", "failed")
        ),
    }
    return render(request, "home.html", context)


@csrf_exempt
@login_not_required
def api_not_found(request: HttpRequest, *args: object, **kwargs: object) -> HttpResponse:
    return JsonResponse({"detail": "Not found", "code": "not_found"}, status=404)
