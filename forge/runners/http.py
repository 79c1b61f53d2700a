"""The ``http_request`` runner: httpx, allow-listed hosts only, bounded in time and size.

Every URL, including each redirect's target, must name an allowed host (``host`` for
any port, ``host:port`` for one); redirects are followed by hand so each hop is
checked. The response is streamed and abandoned past the size cap. Requests that may
change something carry an ``Idempotency-Key`` derived from run and step only, so a
retry of the same step sends the same key and the server can deduplicate it. A
response with status 400 or above fails the step but keeps the response as output.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from forge.redaction import is_secret_key, redact
from forge.runners.base import Isolation, RunContext, RunnerOutcome
from forge.runners.errors import HostNotAllowed, ResponseTooLarge, RunnerError, RunnerTimeout
from forge.runners.preview import CallPreview, json_text
from forge.tools.spec import ToolSpec

# httpx (with the CLI it brings along) is imported by the calls that use it, not by every
# process that builds the runners: `forge compile` builds them without sending anything.
if TYPE_CHECKING:
    import httpx

__all__ = ["HttpRunner", "idempotency_key"]

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
# Headers a preview masks besides those ``forge.redaction`` calls secret by name.
SECRET_HEADERS = frozenset({"proxy-authorization", "x-auth", "x-csrftoken", "x-xsrf-token"})
MASKED = "[masked]"


def idempotency_key(context: RunContext) -> str:
    """The same for every attempt of a step, different for every step of every run."""
    digest = hashlib.sha256(f"{context.run_id}\0{context.step_id}".encode()).hexdigest()
    return f"forge-{digest[:32]}"


class HttpRunner:
    def __init__(
        self,
        allowed_hosts: Iterable[str],
        *,
        max_response_bytes: int = 1 << 20,
        max_redirects: int = 5,
    ) -> None:
        self.allowed_hosts = frozenset(host.strip().lower() for host in allowed_hosts)
        self.max_response_bytes = max_response_bytes
        self.max_redirects = max_redirects

    def preview(self, tool: ToolSpec, args: Mapping[str, Any], context: RunContext) -> CallPreview:
        """The exact request, as sent: method, URL, headers (secret ones masked), body."""
        method, url = str(args["method"]).upper(), str(args["url"])
        lines = [f"{method} {url}"]
        for name, value in sorted(_headers(method, args, context).items()):
            lines.append(f"{name}: {MASKED if _secret_header(name) else value}")
        body = args.get("body")
        if body is not None:
            lines += ["", redact(body) if isinstance(body, str) else json_text(body)]
        host = _host(url)
        reach = (
            ""
            if host in self.allowed_hosts
            else " (host not on the allow list: it will be refused)"
        )
        return CallPreview("http_request", f"{method} {url}{reach}", "\n".join(lines))

    def run(self, tool: ToolSpec, args: Mapping[str, Any], context: RunContext) -> RunnerOutcome:
        import httpx

        isolation: Isolation = "host-allowlist"
        deadline = time.monotonic() + context.timeout_s
        method = str(args["method"]).upper()
        headers = _headers(method, args, context)
        body = args.get("body")
        try:
            # trust_env=False: no proxy, netrc or CA settings from the worker's environment.
            with httpx.Client(trust_env=False, follow_redirects=False) as client:
                request = client.build_request(
                    method,
                    str(args["url"]),
                    headers=headers,
                    content=body if isinstance(body, str) else None,
                    json=body if body is not None and not isinstance(body, str) else None,
                )
                status, response_headers, content, content_type = self._send(
                    client, request, deadline
                )
        except RunnerError as error:
            return RunnerOutcome.failure(str(error), error.code, isolation=isolation)
        except httpx.InvalidURL as exc:
            return RunnerOutcome.failure(f"invalid URL: {exc}", "invalid_args", isolation=isolation)
        except httpx.TimeoutException:
            message = f"no answer within the {context.timeout_s:g}s timeout"
            return RunnerOutcome.failure(message, "timeout", isolation=isolation)
        except httpx.HTTPError as exc:
            message = f"{type(exc).__name__}: {exc}"
            return RunnerOutcome.failure(message, "request_failed", isolation=isolation)
        output = {
            "status": status,
            "headers": response_headers,
            "body": _body(content, content_type),
        }
        if status >= 400:
            return RunnerOutcome.failure(
                f"HTTP status {status}", "http_status", output=output, isolation=isolation
            )
        return RunnerOutcome.success(output, isolation=isolation)

    def _send(
        self, client: httpx.Client, request: httpx.Request, deadline: float
    ) -> tuple[int, dict[str, str], str, str]:
        import httpx

        for _ in range(self.max_redirects + 1):
            self._check_host(request.url)
            request.extensions["timeout"] = httpx.Timeout(_remaining(deadline)).as_dict()
            response = client.send(request, stream=True)
            try:
                if response.next_request is None:
                    content = self._read_capped(response, deadline)
                    headers = dict(response.headers.items())
                    content_type = response.headers.get("content-type", "")
                    return response.status_code, headers, content, content_type
                request = response.next_request
            finally:
                response.close()
        raise RunnerError(f"more than {self.max_redirects} redirects", code="too_many_redirects")

    def _check_host(self, url: httpx.URL) -> None:
        if url.scheme not in ("http", "https"):
            raise HostNotAllowed(f"scheme {url.scheme!r} is not allowed, only http and https")
        host = url.host.lower()
        port = url.port or (443 if url.scheme == "https" else 80)
        if host not in self.allowed_hosts and f"{host}:{port}" not in self.allowed_hosts:
            raise HostNotAllowed(f"host {host!r} (port {port}) is not on the allow list")

    def _read_capped(self, response: httpx.Response, deadline: float) -> str:
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > self.max_response_bytes:
            raise ResponseTooLarge(
                f"response declares {declared} bytes, over the {self.max_response_bytes} limit"
            )
        data = bytearray()
        # iter_bytes decodes gzip and friends, so the cap applies to what we keep.
        for chunk in response.iter_bytes():
            data += chunk
            if len(data) > self.max_response_bytes:
                raise ResponseTooLarge(f"response is over the {self.max_response_bytes} byte limit")
            if time.monotonic() > deadline:
                # Each read had its own timeout; this bounds a server that drips forever.
                raise RunnerTimeout("the response did not finish within the timeout")
        return bytes(data).decode(response.encoding or "utf-8", errors="replace")


def _headers(method: str, args: Mapping[str, Any], context: RunContext) -> dict[str, str]:
    """The request's headers: the call's own, plus an idempotency key for a request that
    may change something (unless the call sets one)."""
    headers = dict(args.get("headers") or {})
    if method not in SAFE_METHODS and not any(
        name.lower() == "idempotency-key" for name in headers
    ):
        headers["Idempotency-Key"] = idempotency_key(context)
    return headers


def _secret_header(name: str) -> bool:
    lowered = name.lower()
    return is_secret_key(lowered) or lowered in SECRET_HEADERS


def _host(url: str) -> str:
    import httpx

    try:
        return httpx.URL(url).host.lower()
    except httpx.InvalidURL:
        return ""


def _remaining(deadline: float) -> float:
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise RunnerTimeout("the timeout passed while following redirects")
    return remaining


def _body(text: str, content_type: str) -> Any:
    media_type = content_type.split(";")[0].strip().lower()
    if media_type == "application/json" or media_type.endswith("+json"):
        try:
            return json.loads(text)
        except ValueError:
            return text
    return text
