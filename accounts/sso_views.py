"""The pages of single sign-on: where it starts, where the provider sends people back.

mozilla-django-oidc's views do the protocol (state, nonce, PKCE, the redirect, the
callback's checks); these subclasses read their settings Forge's way (accounts.sso_oidc)
and turn every way a sign-in can fail into the login page with a clear message and a
stable code (``data-code`` on the alert), instead of the library's bare redirect or a
server error. With single sign-on off both answer 404 ``sso_not_configured``, and the
URLconf has loaded only the library's views (a few milliseconds), not its HTTP client.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.forms import AuthenticationForm
from django.core.exceptions import SuspiciousOperation
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views import View
from mozilla_django_oidc.views import (
    OIDCAuthenticationCallbackView,
    OIDCAuthenticationRequestView,
)

from accounts.lockout import SSO_ATTEMPT
from accounts.sso_discovery import SsoUnavailable
from accounts.sso_oidc import oidc_setting
from accounts.sso_settings import login_methods, sso_settings


def login_page_error(request: HttpRequest, code: str, message: str, status: int) -> HttpResponse:
    """The login page with ``message`` in its alert and ``code`` as the alert's data-code."""
    context = {
        **login_methods(),
        "form": AuthenticationForm(request),
        "login_error": {"code": code, "message": message},
        "next": "",
    }
    return render(request, "registration/login.html", context, status=status)


def _not_configured(request: HttpRequest) -> HttpResponse:
    return login_page_error(
        request,
        "sso_not_configured",
        "Single sign-on is not configured on this site (FORGE_OIDC_ISSUER is empty).",
        404,
    )


def _unavailable(request: HttpRequest, exc: SsoUnavailable) -> HttpResponse:
    return login_page_error(
        request, exc.code, f"Single sign-on is unavailable: {exc.message}.", 502
    )


class SsoStartView(OIDCAuthenticationRequestView):  # type: ignore[misc]
    """GET /accounts/sso/login/: off to the provider's login page (authorization request)."""

    get_settings = staticmethod(oidc_setting)

    def __init__(self, **kwargs: Any) -> None:
        # The library reads the provider's endpoint here, before it is known whether
        # single sign-on is on; get() reads it, where a failure can be answered.
        View.__init__(self, **kwargs)

    def get(self, request: HttpRequest) -> HttpResponse:
        if sso_settings() is None:
            return _not_configured(request)
        try:
            self.OIDC_OP_AUTH_ENDPOINT = oidc_setting("OIDC_OP_AUTHORIZATION_ENDPOINT")
        except SsoUnavailable as exc:
            return _unavailable(request, exc)
        self.OIDC_RP_CLIENT_ID = oidc_setting("OIDC_RP_CLIENT_ID")
        response: HttpResponse = super().get(request)
        return response


class SsoCallbackView(OIDCAuthenticationCallbackView):  # type: ignore[misc]
    """GET /accounts/sso/callback/: the provider's answer; the redirect URI to register."""

    get_settings = staticmethod(oidc_setting)

    def get(self, request: HttpRequest) -> HttpResponse:
        if sso_settings() is None:
            return _not_configured(request)
        setattr(request, SSO_ATTEMPT, True)  # django-axes counts it by address alone
        try:
            response: HttpResponse = super().get(request)
        except SuspiciousOperation:
            return login_page_error(
                request,
                "sso_state_invalid",
                "This sign-in does not match one started in this browser (it expired, was "
                "used already, or began elsewhere); sign in again.",
                400,
            )
        except SsoUnavailable as exc:
            return _unavailable(request, exc)
        except OSError as exc:
            # requests' errors (the library's HTTP client) are OSErrors; requests is not
            # imported here, so that the URLconf does not load it while SSO is off.
            return login_page_error(
                request,
                "sso_provider_error",
                f"The identity provider did not complete the sign-in: {exc}",
                502,
            )
        return response

    def login_failure(self) -> HttpResponse:
        request = self.request
        if error := request.GET.get("error"):
            description = request.GET.get("error_description", "")
            return login_page_error(
                request,
                "sso_provider_refused",
                f"The identity provider refused the sign-in: {error}"
                + (f" ({description})" if description else "")
                + ".",
                403,
            )
        failure = getattr(request, "sso_failure", None)
        if failure is not None:
            return login_page_error(
                request, failure.code, f"Single sign-on refused: {failure.message}.", failure.status
            )
        user = getattr(self, "user", None)
        if user is not None and not user.is_active:
            return login_page_error(
                request, "sso_user_inactive", "This Forge account is deactivated.", 403
            )
        return login_page_error(
            request,
            "sso_state_invalid",
            "This sign-in does not match one started in this browser (it expired, was used "
            "already, or began elsewhere); sign in again.",
            400,
        )
