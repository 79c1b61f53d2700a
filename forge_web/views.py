"""The home page, and the JSON 404 for paths under /api/ that name no operation."""

from __future__ import annotations

from django.contrib.auth.decorators import login_not_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.csrf import csrf_exempt


def home(request: HttpRequest) -> HttpResponse:
    return render(request, "home.html")


@csrf_exempt
@login_not_required
def api_not_found(request: HttpRequest, *args: object, **kwargs: object) -> HttpResponse:
    return JsonResponse({"detail": "Not found", "code": "not_found"}, status=404)
