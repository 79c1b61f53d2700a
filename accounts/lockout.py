"""The answer to a login refused because of too many failures (django-axes calls it).

A 429 with ``Retry-After``: the login page again, with the reason in place of the usual
"wrong password" error (the form stays for after the cool-off), or, for a client that
prefers JSON, Forge's error shape ``{"detail", "code": "login_locked_out"}``. The message
says "this account or this address" on purpose: it must not tell a guesser which count
locked, nor whether the account exists (unknown usernames are counted like known ones).
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth.forms import AuthenticationForm
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render

__all__ = ["LOCKOUT_CODE", "lockout_response"]

LOCKOUT_CODE = "login_locked_out"


def lockout_response(
    request: HttpRequest, original_response: HttpResponse | None, credentials: Any
) -> HttpResponse:
    seconds = int(settings.AXES_COOLOFF_TIME.total_seconds())
    detail = (
        "Too many failed logins for this account or from this address; "
        f"try again in {max(seconds // 60, 1)} minutes."
    )
    response: HttpResponse
    if request.get_preferred_type(["text/html", "application/json"]) == "application/json":
        response = JsonResponse({"detail": detail, "code": LOCKOUT_CODE}, status=429)
    else:
        context = {
            "form": AuthenticationForm(request),
            "locked_out": detail,
            "next": request.POST.get("next", request.GET.get("next", "")),
        }
        response = render(request, "registration/login.html", context, status=429)
    response["Retry-After"] = str(seconds)  # at most: the cool-off runs from the last failure
    return response
