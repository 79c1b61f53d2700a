"""httpx through the guard: the name is looked up once, its address checked, and the
connection made to that address, with the name kept for the Host header and for TLS."""

from __future__ import annotations

import ssl
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest
import trustme

from forge.guarded_http import guarded_transport
from forge.netguard import AddressNotAllowed


class _Hosts(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        self.server.hosts.append(self.headers["host"])  # type: ignore[attr-defined]
        self.send_response(200)
        self.send_header("content-length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, format: str, *args: object) -> None:
        pass


def _serve(context: ssl.SSLContext | None = None) -> Iterator[ThreadingHTTPServer]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Hosts)
    server.hosts = []  # type: ignore[attr-defined]
    if context is not None:
        server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture
def server() -> Iterator[ThreadingHTTPServer]:
    yield from _serve()


@pytest.fixture
def ca() -> trustme.CA:
    return trustme.CA()


@pytest.fixture
def tls_server(ca: trustme.CA) -> Iterator[ThreadingHTTPServer]:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("secure.example.com").configure_cert(context)
    yield from _serve(context)


def test_the_connection_goes_to_the_checked_address_with_the_name_as_host(dns, server):
    port = server.server_address[1]
    dns["service.example.com"] = ["127.0.0.1"]

    with httpx.Client(transport=guarded_transport(["127.0.0.1"])) as client:
        response = client.get(f"http://service.example.com:{port}/")

    assert response.status_code == 200
    assert server.hosts == [f"service.example.com:{port}"]
    assert dns.calls == ["service.example.com"]  # looked up once, never again to connect


def test_a_name_resolving_to_loopback_is_refused_before_connecting(dns, server):
    port = server.server_address[1]
    dns["rebound.example.com"] = ["127.0.0.1"]

    with (
        httpx.Client(transport=guarded_transport(["rebound.example.com"])) as client,
        pytest.raises(AddressNotAllowed, match="resolves to 127.0.0.1, a loopback address"),
    ):
        client.get(f"http://rebound.example.com:{port}/")

    assert server.hosts == []


def test_the_next_address_is_tried_when_the_first_does_not_answer(dns, server):
    port = server.server_address[1]
    dns["two.example.com"] = ["127.0.0.2", "127.0.0.1"]  # nothing listens on .2

    with httpx.Client(transport=guarded_transport(["127.0.0.0/8"])) as client:
        assert client.get(f"http://two.example.com:{port}/").status_code == 200


def test_a_name_that_does_not_resolve_is_a_connect_error(dns):
    dns["nowhere.example.com"] = []

    with (
        httpx.Client(transport=guarded_transport([])) as client,
        pytest.raises(httpx.ConnectError, match="nowhere.example.com"),
    ):
        client.get("http://nowhere.example.com/")


def test_tls_is_verified_against_the_name_not_the_address(dns, ca, tls_server):
    port = tls_server.server_address[1]
    dns["secure.example.com"] = ["127.0.0.1"]
    dns["other.example.com"] = ["127.0.0.1"]  # same address, a certificate not its own
    trusted = ssl.create_default_context()
    ca.configure_trust(trusted)

    with httpx.Client(transport=guarded_transport(["127.0.0.1"], verify=trusted)) as client:
        assert client.get(f"https://secure.example.com:{port}/").status_code == 200
        with pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
            client.get(f"https://other.example.com:{port}/")

    assert tls_server.hosts == [f"secure.example.com:{port}"]
