"""How often the API may be called: django-ninja's throttling, with rates from settings.

- ``PersonRateThrottle``: every authenticated API request (a bearer token or the
  browser's session alike) counts against ``FORGE_API_RATE`` per person (user id), so a
  person's tokens and open pages share one allowance. The API applies it to every
  operation (forge_web.api).
- ``CompileRateThrottle``: the calls that compile a plan (about 150 ms of CPU for 10,000
  steps) or ask the planner also count against ``FORGE_API_COMPILE_RATE``; ``EXPENSIVE``
  is the pair such operations declare (an operation's own ``throttle=`` replaces the
  API's).
- ``RefusedRequestsMiddleware``: requests the API refuses for want of valid credentials
  (401) count against ``FORGE_API_ANON_RATE`` per client address; past it, that address
  is answered 429 before its credentials are looked at. Ninja's own throttles run after
  authentication, so they never see such requests.

A rate is ``"<requests>/<period>"`` (``600/min``, ``20/10s``; periods s, m, h, d) and is
read from settings at each request, so it can change at run time (and tests can set
one); an empty rate turns that limit off. A throttled request is answered 429
``throttled`` with ``Retry-After``: the seconds until the oldest counted request leaves
the window (ninja's sliding log).

Counts live in Django's default cache: Redis when ``REDIS_URL`` is set, shared by every
process; else each process's own memory, so that N web processes allow N times the
rate. The client address is the connection's (``REMOTE_ADDR``), never an
``X-Forwarded-For`` header anyone can send: behind a proxy, uvicorn puts the client's
address there when told to trust the proxy (``FORGE_FORWARDED_ALLOW_IPS``). A cache that
fails lets requests through (logged): a limit is not worth an outage.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from ninja.throttling import SimpleRateThrottle

from accounts.outages import REDIS

__all__ = [
    "EXPENSIVE",
    "REFUSALS",
    "CompileRateThrottle",
    "PersonRateThrottle",
    "RefusedRequestsMiddleware",
    "throttled",
]

logger = logging.getLogger(__name__)

API_PREFIX = "/api/"


class SettingRateThrottle(SimpleRateThrottle):
    """Ninja's sliding-log throttle with its rate read from the setting ``setting`` at
    each request. Ninja keeps the request being judged on the throttle object, which is
    shared by every thread; this one keeps it on the thread (``wait`` follows
    ``allow_request`` on the same thread)."""

    setting = ""

    def __init__(self) -> None:  # no rate is fixed at import: see get_rate()
        self._judged = threading.local()

    def get_rate(self) -> str | None:
        return getattr(settings, self.setting) or None

    def ident(self, request: HttpRequest) -> str | None:
        """Whom the request counts for; None: it is not counted."""
        raise NotImplementedError

    def allow_request(self, request: HttpRequest) -> bool:
        self._judged.wait = self._wait(request, count=True)
        return self._judged.wait is None

    def _wait(self, request: HttpRequest, *, count: bool) -> float | None:
        """Seconds until ``request``'s ident is under its rate again, or None when it is
        now; ``count`` adds this request to its history when it is let through. A cache
        that fails lets everything through, saying so in the log."""
        rate, ident = self.get_rate(), self.ident(request)
        if rate is None or ident is None:
            return None
        limit, window = self.parse_rate(rate)
        assert limit is not None and window is not None
        key = self.cache_format % {"scope": self.scope, "ident": ident}
        try:
            now = time.time()
            history = [moment for moment in self.cache.get(key, []) if moment > now - window]
            wait = window - (now - history[-1]) if len(history) >= limit else None
            if wait is None and count:
                self.cache.set(key, [now, *history], window)
        except Exception as error:
            _cache_failed(error)
            return None
        REDIS.recovered()
        return wait

    def wait(self) -> float | None:
        return getattr(self._judged, "wait", None)


def _cache_failed(error: Exception) -> None:
    # The cache is Redis when there is one: its outage is logged once, not per request
    # (rate limits are not applied meanwhile).
    if REDIS.failed(error):
        logger.warning("the cache failed: rate limit not applied until it is back")


class PersonRateThrottle(SettingRateThrottle):
    """Every authenticated request, per person."""

    scope = "person"
    setting = "FORGE_API_RATE"

    def ident(self, request: HttpRequest) -> str | None:
        user = getattr(request, "user", None)
        return str(user.pk) if user is not None and user.is_authenticated else None


class CompileRateThrottle(PersonRateThrottle):
    """The calls that compile a plan or ask the planner, per person."""

    scope = "compile"
    setting = "FORGE_API_COMPILE_RATE"


class RefusalRateThrottle(SettingRateThrottle):
    """Requests refused for want of valid credentials, per client address."""

    scope = "refused"
    setting = "FORGE_API_ANON_RATE"

    def ident(self, request: HttpRequest) -> str | None:
        return request.META.get("REMOTE_ADDR") or None

    def blocked(self, request: HttpRequest) -> float | None:
        """Seconds until the address may be refused again, or None if it may be now."""
        return self._wait(request, count=False)


# What an operation that compiles a plan or asks the planner declares as its ``throttle``.
EXPENSIVE = [PersonRateThrottle(), CompileRateThrottle()]

# The count of refused requests per address: the API's (RefusedRequestsMiddleware) and
# the MCP endpoints' (forge_web.mcp_admission).
REFUSALS = RefusalRateThrottle()


class RefusedRequestsMiddleware:
    """Counts the API's 401 answers per address and answers 429 to an address past
    ``FORGE_API_ANON_RATE`` before anything reads its credentials (settings: before the
    session middleware)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if not request.path.startswith(API_PREFIX):
            return self.get_response(request)
        wait = REFUSALS.blocked(request)
        if wait is not None:
            return throttled(wait)
        response = self.get_response(request)
        if response.status_code == 401:
            REFUSALS.allow_request(request)  # counts it
        return response


def throttled(wait: float) -> HttpResponse:
    """The API's 429 answer, as ninja's ``Throttled`` is answered (forge_web.api)."""
    response = JsonResponse({"detail": "Too many requests.", "code": "throttled"}, status=429)
    response["Retry-After"] = str(max(1, math.ceil(wait)))
    return response
