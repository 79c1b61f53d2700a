"""Forge's OAuth 2.1 server (MCP authorization), in django-oauth-toolkit's URL namespace
(its views reverse their neighbours by ``oauth2_provider:`` names): the server's
metadata (RFC 8414) at the site's root, and under ``/oauth/`` the consent page, the
token and revocation endpoints and dynamic client registration (RFC 7591, and RFC 7592
for the registration token the library hands out). The library's own application and
token management pages, its device flow and its OpenID Connect endpoints are not served.
"""

from __future__ import annotations

from django.urls import path
from oauth2_provider import views

from accounts.oauth_registration import register
from accounts.oauth_views import ConsentView

app_name = "oauth2_provider"

# The endpoints that programs (an MCP host's OAuth client) call, not people: their errors
# are answered as JSON (forge_web.outages). The site mounts these URLs at its root.
_PROGRAMS_PATHS = ("/oauth/token/", "/oauth/revoke/", "/oauth/register/")


def is_oauth_program_path(path: str) -> bool:
    """Whether ``path`` is one of the OAuth endpoints that programs call."""
    return path.startswith(_PROGRAMS_PATHS)


urlpatterns = [
    path(
        ".well-known/oauth-authorization-server",
        views.OAuthServerMetadataView.as_view(),
        name="oauth-server-metadata",
    ),
    path("oauth/authorize/", ConsentView.as_view(), name="authorize"),
    path("oauth/token/", views.TokenView.as_view(), name="token"),
    path("oauth/revoke/", views.RevokeTokenView.as_view(), name="revoke-token"),
    path("oauth/register/", register, name="dcr-register"),
    path(
        "oauth/register/<str:client_id>/",
        views.DynamicClientRegistrationManagementView.as_view(),
        name="dcr-register-management",
    ),
]
