"""The consent page of Forge's OAuth server: a signed-in person allows an MCP host to act
as them (django-oauth-toolkit's authorization view, in Forge's template).

The page's form posts back here and the answer redirects to the host's redirect URI.
Browsers hold a form's redirect to the page's ``form-action`` policy, which is ``'self'``
everywhere else, so this page's policy also names the origin of the redirect URI the
request carries (already checked against the client's registered ones by then). A
request without PKCE's S256 method is refused before the page is shown.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from oauth2_provider.views import AuthorizationView

__all__ = ["ConsentView"]


class ConsentView(AuthorizationView):  # type: ignore[misc]
    template_name = "accounts/oauth_consent.html"

    def get(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if request.GET.get("code_challenge_method") != "S256":
            # The library refuses "plain" only once the person has consented, when it
            # makes the code; asked here, nobody consents to a request bound to fail.
            problem = {
                "error": "invalid_request",
                "description": 'PKCE is required, with code_challenge_method "S256"',
            }
            return self.render_to_response({"error": problem}, status=400)
        response: HttpResponse = super().get(request, *args, **kwargs)
        data = getattr(self, "oauth2_data", None) or {}
        redirect_uri = data.get("redirect_uri")
        if response.status_code == 200 and redirect_uri:
            parts = urlsplit(redirect_uri)
            origin = f"{parts.scheme}://{parts.netloc}"
            policy = dict(settings.SECURE_CSP)
            policy["form-action"] = [*policy.get("form-action", []), origin]
            response._csp_config = policy  # type: ignore[attr-defined]
        return response
