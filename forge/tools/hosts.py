"""The hosts ``http_request`` may reach: one rule, in one place.

A deployment lists them in ``FORGE_HTTP_ALLOWED_HOSTS`` (the ``forge`` command adds
``--allow-host``): ``host`` for any port, ``host:port`` for one. ``HostAllowList.refusal``
is the rule; the runner applies it to each request and each redirect's target, its
preview to the call it shows an approver, and the compiler to a URL written in the plan
(through the tool's spec, which the toolbox builds with the same list:
``ToolSpec.refusal_of``), so a call the runner will refuse is never approvable. Only
``http`` and ``https`` are reachable. A URL is read here with ``urllib.parse``, the host
in its ASCII (IDNA) form as httpx sends it; the runner reads each hop with httpx itself.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from forge.tools.spec import CallRefusal

__all__ = ["ALLOW_LIST_SETTING", "HostAllowList"]

ALLOW_LIST_SETTING = "FORGE_HTTP_ALLOWED_HOSTS"
_DEFAULT_PORTS = {"http": 80, "https": 443}


@dataclass(frozen=True)
class HostAllowList:
    hosts: frozenset[str]

    @classmethod
    def of(cls, hosts: Iterable[str]) -> HostAllowList:
        """The list as configured: entries trimmed and lower-cased, empty ones dropped."""
        return cls(frozenset(entry for host in hosts if (entry := host.strip().lower())))

    def refusal(self, scheme: str, host: str, port: int | None) -> CallRefusal | None:
        """Why a request to ``scheme://host:port`` is refused, or ``None`` when it may go
        (``port`` ``None``: the scheme's own)."""
        scheme = scheme.lower()
        if scheme not in _DEFAULT_PORTS:
            return CallRefusal(
                "host_not_allowed",
                f"scheme {scheme!r} is not allowed, only http and https",
                "write the URL with http:// or https://",
            )
        host = host.lower()
        port = port or _DEFAULT_PORTS[scheme]
        if host in self.hosts or f"{host}:{port}" in self.hosts:
            return None
        return CallRefusal(
            "host_not_allowed",
            f"host {host!r} (port {port}) is not on the allow list",
            f"add {host} (any port) or {host}:{port} to {ALLOW_LIST_SETTING} (the forge "
            f"command: --allow-host {host}), or call a host on the list",
        )

    def url_refusal(self, url: str) -> CallRefusal | None:
        """``refusal`` for the host ``url`` names; ``None`` for a URL without a readable
        host, which the runner refuses as invalid arguments."""
        try:
            parts = urlsplit(url)
            port = parts.port
        except ValueError:
            return None
        host = parts.hostname
        if not host:
            return None
        try:
            host = host.encode("idna").decode("ascii")
        except UnicodeError:
            return None
        return self.refusal(parts.scheme, host, port)

    def call_refusal(self, args: Mapping[str, Any]) -> CallRefusal | None:
        """``url_refusal`` of an ``http_request`` call's ``url``, when it is text (a value
        not known yet, ``None``, is judged once it is)."""
        url = args.get("url")
        return self.url_refusal(url) if isinstance(url, str) else None
