"""The one NinjaAPI, mounted at /api/v1/: authentication, error mapping and the routers.

Authentication: a bearer API token, or the browser's session with CSRF for unsafe
methods (accounts.auth). Every operation needs one of them unless it says ``auth=None``.

Errors are always JSON ``{"detail": ..., "code": ...}``:

- 401 ``not_authenticated``: no credentials, or a bad or revoked token
- 403 ``permission_denied`` (a role is missing) or ``csrf_failed``
- 404 ``not_found``
- 400 with the error's own ``code`` for ``forge.errors.ForgeError``, plus ``diagnostics``
  when the error carries them and ``path`` when it names a place in a plan document
  (``FORGE_ERROR_STATUS`` and ``FORGE_ERROR_CODE_STATUS`` give some errors another status)
- 413 ``request_too_large``, 400 ``bad_request`` for a body Django refuses to read
- 409 ``verify_running`` and 429 ``verify_throttled`` with ``Retry-After`` when a full
  walk of the audit chain may not start now
- 429 ``throttled`` with ``Retry-After``: past a request rate (accounts.throttling)
- 422 ``validation_error`` with ``errors``: the request does not match the schema
- 503 ``database_unavailable`` with ``Retry-After``: the database is away for the moment
  (``accounts.outages`` says which errors mean that; logged once per outage)
- 500 ``server_error``: anything unexpected, logged, never a stack trace in the answer
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Any

from django.conf import settings
from django.core.exceptions import PermissionDenied, RequestDataTooBig, SuspiciousOperation
from django.db import DatabaseError
from django.http import Http404, HttpRequest, HttpResponse
from django.utils.csp import CSP
from django.views.decorators.csp import csp_override
from ninja import NinjaAPI
from ninja.errors import AuthenticationError, HttpError, ValidationError

from accounts.api import router as accounts_router
from accounts.auth import BearerTokenAuth, SessionAuth
from accounts.outages import note_database_failure
from accounts.teams_api import router as teams_router
from accounts.throttling import PersonRateThrottle
from audit.api import router as audit_router
from evaluations.api import router as evaluations_router
from forge.errors import ForgeError
from forge.gateway.binding import GatewayRefused
from forge.runtime import TransitionRefused
from forge.runtime.gate import AuthorCannotDecide, GateRefused
from forge_web.outages import database_unavailable
from forge_web.strict_json import StrictJsonParser
from gateway.api import router as gateway_router
from plans.api import router as plans_router
from plans.errors import NotYourProposal, ProposalFinished, UnknownVersion, VersionConflict
from plans.rules_api import router as rules_router
from plans.rules_changes import RulesChangeRefused
from reviews.api import router as reviews_router
from reviews.inbox_api import router as inbox_router
from runs.api import router as runs_router
from runs.metrics_api import router as metrics_router
from runs.services import NotRunnable

logger = logging.getLogger(__name__)


# Swagger UI sets inline styles, so the docs page alone may use them; scripts stay 'self'.
_docs_csp = csp_override({**settings.SECURE_CSP, "style-src": [CSP.SELF, CSP.UNSAFE_INLINE]})

api = NinjaAPI(
    title="Forge API",
    version="1",
    description="Reviewed, compiled, audited executions of AI-agent plans.",
    urls_namespace="api",
    auth=[BearerTokenAuth(), SessionAuth()],
    throttle=[PersonRateThrottle()],  # FORGE_API_RATE per person; some operations add more
    openapi_url="/openapi.json",
    docs_url="/docs",
    docs_decorator=_docs_csp,
    parser=StrictJsonParser(),
)

# --- Routers: one per app, each owns its paths (see the SPEC section 6 table) -----------
api.add_router("", accounts_router)  # /me, /tokens
api.add_router("", teams_router)  # /teams (admins)
api.add_router("", audit_router)  # /audit, /audit/export, /audit/verify
api.add_router("", plans_router)  # /plans..., /compile, /tools
api.add_router("", rules_router)  # /rules (admins: approval rules under four eyes)
api.add_router("", runs_router)  # /runs...
api.add_router("", gateway_router)  # /gateway/tools, /gateway/calls (SPEC section 11)
api.add_router("", reviews_router)  # /versions/{id}/threads, /threads..., request-changes
api.add_router("", metrics_router)  # /metrics
api.add_router("", evaluations_router)  # /evaluations
api.add_router("", inbox_router)  # /me/inbox, /me/home, /me/notifications, /webhooks

# ForgeErrors answer 400 unless listed here (most specific class wins), e.g.
# {PlanNotApproved: 409, PlanTooLarge: 413}.
FORGE_ERROR_STATUS: dict[type[ForgeError], int] = {
    VersionConflict: 409,  # has_errors, not_submitted, not_approved, superseded
    RulesChangeRefused: 409,  # a rules version decided already
    UnknownVersion: 404,
    NotRunnable: 409,  # a resume the run or the version does not allow
    TransitionRefused: 409,  # a move the run's or step's status does not allow
    GateRefused: 409,  # the approval gate: not approved, self-approved, content changed
    NotYourProposal: 403,  # another person's request to the planner
    ProposalFinished: 409,  # a cancel after the planner answered
    AuthorCannotDecide: 403,  # self_approval: the version's author deciding on its steps
    GatewayRefused: 409,  # a gateway call refused, nothing forwarded (SPEC section 11)
}
# ... or, for one error class with many codes, by code (before the class).
FORGE_ERROR_CODE_STATUS: dict[str, int] = {
    "document_too_large": 413,  # the plan import limit FORGE_MAX_PLAN_BYTES
    "verify_running": 409,  # audit.walk_lock: another full walk of the chain runs
    "verify_throttled": 429,  # audit.walk_lock: the last walk was too recent
    "anchor_log_unwritable": 503,  # audit.anchors: the anchor log cannot be appended to
    # The planner (plans.planning): not set up, or its model gave no plan.
    "planner_not_configured": 503,
    "invalid_planner_spec": 503,
    "planner_file_unreadable": 503,
    "invalid_planner_script": 503,
    "planner_exhausted": 503,
    "model_timeout": 504,
    "model_unreachable": 502,
    "model_http_error": 502,
    "model_invalid_response": 502,
    "invalid_plan_output": 422,
    "invalid_meta": 400,  # a gateway call naming a run without a step, or the reverse
}

_CODE_BY_STATUS = {
    400: "bad_request",
    401: "not_authenticated",
    403: "permission_denied",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    413: "request_too_large",
    429: "throttled",
}


def error(request: HttpRequest, status: int, detail: Any, code: str, **extra: Any) -> HttpResponse:
    """The one shape of every API error."""
    return api.create_response(request, {"detail": detail, "code": code, **extra}, status=status)


@api.exception_handler(AuthenticationError)
def _not_authenticated(request: HttpRequest, exc: AuthenticationError) -> HttpResponse:
    message = exc.message if exc.message != "Unauthorized" else "Authentication required"
    response = error(request, 401, message, "not_authenticated")
    response["WWW-Authenticate"] = 'Bearer realm="forge"'
    return response


@api.exception_handler(HttpError)
def _http_error(request: HttpRequest, exc: HttpError) -> HttpResponse:
    if isinstance(exc.__cause__, ForgeError):  # a body forge_web.strict_json refused
        return _forge_error(request, exc.__cause__)
    code = getattr(exc, "code", None) or _CODE_BY_STATUS.get(exc.status_code, "error")
    return error(request, exc.status_code, exc.message, code)


@api.exception_handler(PermissionDenied)
def _permission_denied(request: HttpRequest, exc: PermissionDenied) -> HttpResponse:
    return error(request, 403, str(exc) or "Permission denied", "permission_denied")


@api.exception_handler(Http404)
def _not_found(request: HttpRequest, exc: Http404) -> HttpResponse:
    return error(request, 404, "Not found", "not_found")


@api.exception_handler(ValidationError)
def _invalid(request: HttpRequest, exc: ValidationError) -> HttpResponse:
    errors = [_located(item) for item in exc.errors]
    return error(request, 422, _said(errors), "validation_error", errors=errors)


def _located(item: dict[str, Any]) -> dict[str, Any]:
    """django-ninja places a body's fields under the operation's parameter that takes the
    body (``["body", "body", "name"]``): a name in Forge's code, not in the request. Each
    operation takes its body as one parameter, so the request's own path is the rest."""
    loc = list(item.get("loc", ()))
    return {**item, "loc": ["body", *loc[2:]] if loc[:1] == ["body"] else loc}


def _said(errors: list[dict[str, Any]], most: int = 3) -> str:
    """The problems in one sentence, so a client that shows ``detail`` shows them."""
    said = [
        f"{_where(item['loc'])}: {item.get('msg', '')}" for item in errors[:most] if item.get("loc")
    ]
    more = f" (and {len(errors) - most} more)" if len(errors) > most else ""
    return f"Invalid request: {'; '.join(said)}{more}" if said else "Invalid request"


def _where(loc: list[Any]) -> str:
    return ".".join(str(part) for part in loc[1:]) or str(loc[0])  # "plan_id", or "body"


def forge_error_answer(exc: ForgeError) -> tuple[int, dict[str, Any]]:
    """The status and body the API answers ``exc`` with."""
    status = FORGE_ERROR_CODE_STATUS.get(exc.code) or next(
        (FORGE_ERROR_STATUS[cls] for cls in type(exc).__mro__ if cls in FORGE_ERROR_STATUS), 400
    )
    body: dict[str, Any] = {"detail": exc.message, "code": exc.code}
    if getattr(exc, "path", ""):  # where in a plan document the problem is
        body["path"] = exc.path
    body.update(getattr(exc, "details", None) or {})  # e.g. the planner's proposal id
    diagnostics = getattr(exc, "diagnostics", None)
    if diagnostics is not None:
        body["diagnostics"] = [_as_json(diagnostic) for diagnostic in diagnostics]
    return status, body


@api.exception_handler(ForgeError)
def _forge_error(request: HttpRequest, exc: ForgeError) -> HttpResponse:
    status, body = forge_error_answer(exc)
    response = api.create_response(request, body, status=status)
    retry_after = getattr(exc, "retry_after", None)
    if retry_after is not None:  # seconds, for 409 and 429 answers that may pass
        response["Retry-After"] = str(retry_after)
    return response


@api.exception_handler(SuspiciousOperation)
def _suspicious(request: HttpRequest, exc: SuspiciousOperation) -> HttpResponse:
    if isinstance(exc, RequestDataTooBig):
        return error(request, 413, "Request body too large", "request_too_large")
    logger.warning("suspicious API request: %s", exc)
    return error(request, 400, "Bad request", "bad_request")


@api.exception_handler(DatabaseError)
def _database_error(request: HttpRequest, exc: DatabaseError) -> HttpResponse:
    if note_database_failure(exc):  # the database is away: a state, not a bug
        return database_unavailable(request)
    return _server_error(request, exc)


@api.exception_handler(Exception)
def _server_error(request: HttpRequest, exc: Exception) -> HttpResponse:
    logger.error("unexpected error in %s %s", request.method, request.path, exc_info=exc)
    return error(request, 500, "Internal server error", "server_error")


def _as_json(value: Any) -> Any:
    """A diagnostic as JSON: its to_dict(), a dataclass's fields, or the value itself."""
    if hasattr(value, "to_dict"):
        return value.to_dict()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    return value
