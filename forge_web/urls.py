"""Forge's URL map: pages, the accounts pages, and the API at /api/v1/."""

from __future__ import annotations

from django.urls import URLPattern, URLResolver, include, path, re_path

from forge_web import views
from forge_web.api import api
from runs import metrics_views
from runs.urls import review_urls


def _api_urls() -> tuple[list[URLPattern | URLResolver], str, str]:
    """The API's URLs, exempt from the login redirect: the API answers 401 itself."""
    patterns, app_name, namespace = api.urls
    for pattern in patterns:
        if isinstance(pattern, URLPattern):
            pattern.callback.login_required = False  # type: ignore[attr-defined]
    return patterns, app_name, namespace


urlpatterns = [
    path("", views.home, name="home"),
    path("accounts/", include("accounts.urls")),
    path("plans/", include("plans.urls")),
    path("runs/", include("runs.urls")),
    path("review/", include(review_urls)),
    path("audit/", include("audit.urls")),
    path("evaluations/", include("evaluations.urls")),
    path("metrics/", metrics_views.metrics_page, name="metrics"),
    path("api/v1/", _api_urls()),
    re_path(r"^api/", views.api_not_found),
]
