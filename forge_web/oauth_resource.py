"""Protected resource metadata (RFC 9728) of Forge's MCP endpoints.

``/.well-known/oauth-protected-resource`` names the site, and its path forms
``.../mcp`` and ``.../mcp/gateway`` name each endpoint (the MCP SDK's client asks the
path form first and checks that the ``resource`` it gets is the endpoint it talks to).
Each names Forge's own authorization server (``accounts.oauth_urls``) and the ``mcp``
scope; django-oauth-toolkit's view writes the document from the request's URL.
"""

from __future__ import annotations

from django.urls import URLPattern, path
from oauth2_provider.views import OAuthProtectedResourceMetadataView

from forge_web.mcp_path import GATEWAY_PATH, MCP_PATH

__all__ = ["metadata_path", "urlpatterns"]

WELL_KNOWN = "/.well-known/oauth-protected-resource"


def metadata_path(endpoint_path: str) -> str:
    """Where the metadata of the endpoint at ``endpoint_path`` (``/mcp``) is served."""
    return WELL_KNOWN + endpoint_path


_view = OAuthProtectedResourceMetadataView.as_view()

urlpatterns: list[URLPattern] = [
    path(WELL_KNOWN.lstrip("/"), _view, name="oauth-protected-resource"),
    path(metadata_path(MCP_PATH).lstrip("/"), _view, name="oauth-protected-resource-mcp"),
    path(
        metadata_path(GATEWAY_PATH).lstrip("/"), _view, name="oauth-protected-resource-gateway"
    ),
]
