"""The ``http_request`` runner: httpx, allow-listed hosts only, bounded in time and size.

Every URL, including each redirect's target, must name an allowed host (``host`` for
any port, ``host:port`` for one: ``forge.tools.hosts``, the rule the compiler applies
too); redirects are followed by hand so each hop is checked. A preview of a call to a
host off the list carries the refusal: it cannot be approved. Each connection then goes
only to the address the name resolved to, once, and only if that address is public or
listed itself (``forge.netguard``): an allowed name that resolves to ``127.0.0.1`` or the
metadata service is refused, ``host_not_allowed``. The response is streamed and
abandoned past the size cap. Requests that may change something carry an
``Idempotency-Key`` derived from run and step only, so a retry of the same step sends
the same key and the server can deduplicate it. A response with status 400 or above
fails the step but keeps the response as output.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from forge.netguard import AddressAllowList, AddressNotAllowed
from forge.redaction import is_secret_key, redact
from forge.runners.base import Isolation, RunContext, RunnerOutcome
from forge.runners.errors import HostNotAllowed, ResponseTooLarge, RunnerError, RunnerTimeout
from forge.runners.preview import CallPreview, json_text
from forge.tools.hosts import HostAllowList
from forge.tools.spec import CallRefusal, ToolSpec

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
        allowed_hosts: HostAllowList | Iterable[str],
        *,
        max_response_bytes: int = 1 << 20,
        max_redirects: int = 5,
    ) -> None:
        self.allowed_hosts = (
            allowed_hosts
            if isinstance(allowed_hosts, HostAllowList)
            else HostAllowList.of(allowed_hosts)
        )
        # Its addresses and networks, which let a connection reach inside (ValueError now
        # for a malformed one, not at the first request).
        self.allowed_addresses = AddressAllowList.parse(self.allowed_hosts.hosts)
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
        refusal = self._refusal(url)
        reach = "" if refusal is None else " (host not on the allow list: it will be refused)"
        return CallPreview(
            "http_request", f"{method} {url}{reach}", "\n".join(lines), refusal=refusal
        )

    def run(self, tool: ToolSpec, args: Mapping[str, Any], context: RunContext) -> RunnerOutcome:
        import httpx

        from forge.guarded_http import guarded_transport

        isolation: Isolation = "host-allowlist"
        deadline = time.monotonic() + context.timeout_s
        method = str(args["method"]).upper()
        headers = _headers(method, args, context)
        body = args.get("body")
        try:
            # trust_env=False: no proxy, netrc or CA settings from the worker's environment.
            # The transport checks the address each connection goes to (forge.netguard).
            transport = guarded_transport(self.allowed_addresses)
            with httpx.Client(
                transport=transport, trust_env=False, follow_redirects=False
            ) as client:
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
        except (RunnerError, AddressNotAllowed) as error:
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
        refusal = self.allowed_hosts.refusal(url.scheme, url.host, url.port)
        if refusal is not None:
            raise HostNotAllowed(refusal.reason)

    def _refusal(self, url: str) -> CallRefusal | None:
        """The refusal ``_check_host`` will give the call's first request, read as httpx
        reads it; ``None`` for a URL httpx cannot read (the call fails as invalid)."""
        import httpx

        try:
            parsed = httpx.URL(url)
        except httpx.InvalidURL:
            return None
        return self.allowed_hosts.refusal(parsed.scheme, parsed.host, parsed.port)

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
