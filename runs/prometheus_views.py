"""``GET /metrics/prometheus``: ``runs.prometheus`` in Prometheus' text format, for a
bearer API token whose user may read metrics (``metrics.view``; an ``auditor`` or a
``viewer`` token). No token, or an unknown or revoked one: 401 with
``WWW-Authenticate: Bearer``; a token without the permission: 403. Errors are the API's
JSON (``{"detail", "code"}``). A session is not enough: scrapers carry tokens, and a
page that a browser may open would want CSRF care for nothing."""

from __future__ import annotations

from django.contrib.auth.decorators import login_not_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.http import require_GET
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest

from accounts.models import ApiToken
from runs.prometheus import REGISTRY

PERMISSION = "metrics.view"


@login_not_required
@require_GET
def prometheus_metrics(request: HttpRequest) -> HttpResponse:
    scheme, _, value = request.headers.get("Authorization", "").partition(" ")
    token = ApiToken.objects.authenticate(value.strip()) if scheme.lower() == "bearer" else None
    if token is None:
        refused = JsonResponse(
            {"detail": "A valid bearer API token is required", "code": "not_authenticated"},
            status=401,
        )
        refused["WWW-Authenticate"] = 'Bearer realm="forge"'
        return refused
    if not token.user.can(PERMISSION):
        return JsonResponse(
            {"detail": token.user.refusal(PERMISSION), "code": "permission_denied"}, status=403
        )
    return HttpResponse(generate_latest(REGISTRY), content_type=CONTENT_TYPE_LATEST)
