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

from accounts.sso_settings import login_methods

__all__ = ["LOCKOUT_CODE", "lockout_parameters", "lockout_response"]

LOCKOUT_CODE = "login_locked_out"

# Set by accounts.sso_views on a single sign-on callback's request.
SSO_ATTEMPT = "forge_sso_attempt"


def lockout_parameters(request_or_attempt: Any, credentials: Any) -> list[str]:
    """What django-axes counts failures by (AXES_LOCKOUT_PARAMETERS): the username and,
    apart, the address; a single sign-on callback by the address alone. It names no one
    until the provider has answered, and counting its failures under a blank username
    would let ten of anyone's lock out everyone's single sign-on."""
    if getattr(request_or_attempt, SSO_ATTEMPT, False):
        return ["ip_address"]
    return ["username", "ip_address"]


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
            **login_methods(),
            "form": AuthenticationForm(request),
            "locked_out": detail,
            "next": request.POST.get("next", request.GET.get("next", "")),
        }
        response = render(request, "registration/login.html", context, status=429)
    response["Retry-After"] = str(seconds)  # at most: the cool-off runs from the last failure
    return response
