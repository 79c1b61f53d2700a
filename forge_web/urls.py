"""Forge's URL map: pages, the accounts pages, the API at /api/v1/, and the OAuth server
of MCP authorization (/oauth/, /.well-known/)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_not_required
from django.templatetags.static import static
from django.urls import URLPattern, URLResolver, include, path, re_path
from django.views.generic import RedirectView

from forge_web import oauth_resource, views
from forge_web.api import api
from runs import metrics_views, prometheus_views


def _api_urls() -> tuple[list[URLPattern | URLResolver], str, str]:
    """The API's URLs, exempt from the login redirect: the API answers 401 itself."""
    patterns, app_name, namespace = api.urls
    for pattern in patterns:
        if isinstance(pattern, URLPattern):
            pattern.callback.login_required = False  # type: ignore[attr-defined]
    return patterns, app_name, namespace


def _moved_to(url: str) -> object:
    """A permanent redirect anyone may follow (the API docs and the favicon are public)."""
    return login_not_required(RedirectView.as_view(url=url, permanent=True))


API_DOCS = "/api/v1/docs"

# A 500 that meets the database away is answered 503 with Retry-After (forge_web.outages).
handler500 = "forge_web.outages.server_error"

urlpatterns = [
    path("", views.home, name="home"),
    path("accounts/", include("accounts.urls")),
    # MCP authorization: Forge's OAuth 2.1 server and its endpoints' resource metadata.
    path("", include("accounts.oauth_urls")),
    *oauth_resource.urlpatterns,
    path("plans/", include("plans.urls")),
    path("runs/", include("runs.urls")),
    path("", include("reviews.urls")),  # /review/ and /runs/<id>/replans/
    path("audit/", include("audit.urls")),
    path("evaluations/", include("evaluations.urls")),
    path("metrics/", metrics_views.metrics_page, name="metrics"),
    path("metrics/prometheus", prometheus_views.prometheus_metrics, name="prometheus"),
    path("api/v1/", _api_urls()),
    # The URLs people type for the API docs (Swagger UI answers at /api/v1/docs only).
    path("api/v1/docs/", _moved_to(API_DOCS)),
    path("api/", _moved_to(API_DOCS)),
    path("api/docs", _moved_to(API_DOCS)),
    path("api/docs/", _moved_to(API_DOCS)),
    path("docs", _moved_to(API_DOCS)),
    path("docs/", _moved_to(API_DOCS)),
    path("favicon.ico", _moved_to(static("forge/favicon.ico"))),
    re_path(r"^api/", views.api_not_found),
]
