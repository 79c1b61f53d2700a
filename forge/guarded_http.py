"""An httpx transport that connects only where ``forge.netguard`` allows.

The check happens where the connection is made: httpcore asks its network backend to
connect to the URL's host, and this backend resolves the name once, refuses it unless
every address passes ``forge.netguard.resolve``, then connects to those very addresses,
in order, until one answers. The URL keeps the name, so the ``Host`` header, TLS's SNI
and the certificate check are all for the name, as without the guard; and every
connection a client opens goes through it, a redirect's included.
"""

from __future__ import annotations

import ssl
from collections.abc import Iterable

import httpcore
import httpx

from forge.netguard import AddressAllowList, resolve

__all__ = ["guarded_transport"]


class _GuardedBackend(httpcore.SyncBackend):
    def __init__(self, allowed: AddressAllowList) -> None:
        self._allowed = allowed

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.NetworkStream:
        try:
            addresses = resolve(host, port, self._allowed)  # AddressNotAllowed goes up as is
        except OSError as exc:
            raise httpcore.ConnectError(f"{host!r} does not resolve: {exc}") from exc
        failure: httpcore.ConnectError | httpcore.ConnectTimeout | None = None
        for address in addresses:
            try:
                return super().connect_tcp(address, port, timeout, local_address, socket_options)
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                failure = exc
        assert failure is not None  # resolve returns at least one address
        raise failure


def guarded_transport(
    allowed: AddressAllowList | Iterable[str], *, verify: ssl.SSLContext | bool = True
) -> httpx.HTTPTransport:
    """A transport for ``httpx.Client(transport=...)`` that refuses internal addresses
    unless ``allowed`` (a host allow list, or its addresses already parsed) names them,
    raising ``forge.netguard.AddressNotAllowed`` from the request. No proxy or
    certificate setting is read from the environment."""
    if not isinstance(allowed, AddressAllowList):
        allowed = AddressAllowList.parse(allowed)
    transport = httpx.HTTPTransport(verify=verify, trust_env=False)
    # httpx has no public way to hand its pool a network backend: the pool it made is
    # replaced by the same one with ours (tests/unit/test_guarded_http.py pins this).
    transport._pool = httpcore.ConnectionPool(
        ssl_context=httpx.create_ssl_context(verify=verify, trust_env=False),
        network_backend=_GuardedBackend(allowed),
    )
    return transport
