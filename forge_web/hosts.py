"""Which ``ALLOWED_HOSTS`` entries can only be reached from this machine.

The development secret key is public (it is in this repository), so anything it signs
(sessions, CSRF tokens, approval tokens) can be forged by anyone. That is harmless only
while the site answers to loopback names alone; settings refuse it for any other host.
"""

from __future__ import annotations

import ipaddress

__all__ = ["non_local_hosts"]

_LOCAL_NAMES = frozenset({"localhost", "testserver"})


def non_local_hosts(hosts: list[str]) -> list[str]:
    """The entries of ``hosts`` that may name a host other than this machine, in order.

    Local: ``localhost``, ``testserver`` (Django's test client), names under
    ``.localhost`` (RFC 6761 reserves them for loopback), and loopback addresses
    (``127.0.0.0/8``, ``::1``, bracketed or not). Everything else is not, ``*`` and
    ``.example.com``-style patterns included.
    """
    return [host for host in hosts if not _is_local(host)]


def _is_local(host: str) -> bool:
    name = host.strip().lower().rstrip(".")
    if name in _LOCAL_NAMES or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name.removeprefix("[").removesuffix("]")).is_loopback
    except ValueError:
        return False
