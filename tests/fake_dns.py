"""A resolver an attacker controls, for tests that must not need the internet.

``dns["name"] = ["10.0.0.5", ...]`` sets what a name resolves to (``socket.getaddrinfo``
is replaced for the test); any other name, IP literals included, resolves as usual.
``dns.calls`` lists the look-ups of the names set here, so a test can prove a name was
looked up once.
"""

from __future__ import annotations

import socket
from typing import Any

import pytest


class FakeDns(dict[str, list[str]]):
    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        super().__init__()
        self.calls: list[str] = []
        real = socket.getaddrinfo

        def getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
            if host not in self:
                return real(host, port, *args, **kwargs)
            self.calls.append(host)
            return [_info(address, port) for address in self[host]]

        monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)


def _info(address: str, port: Any) -> tuple[Any, ...]:
    if ":" in address:
        return (socket.AF_INET6, socket.SOCK_STREAM, 6, "", (address, port, 0, 0))
    return (socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, port))
