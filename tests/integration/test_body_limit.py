"""A real server refuses a request body over the limit before it is buffered: a declared
length over the limit is answered at once, a chunked body when it crosses the limit, and
neither makes the web process hold the body. Bodies under the limit go through whole.

Requests are written on a raw socket, so the test controls how much of the body has been
sent when the answer comes. The SQLite deployment is enough: this is about the server."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from django.conf import settings

from .deployment import Deployment, RawRequest

pytestmark = pytest.mark.slow

LIMIT = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
MIB = 2**20
HUGE = 200 * MIB


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    running = Deployment("sqlite", tmp_path_factory.mktemp("body-limit"))
    try:
        yield running.start(workers=0)
    finally:
        running.stop()
        print(running.logs())  # pytest shows it only when a test fails


def peak_rss(deployment: Deployment) -> int:
    status = Path(f"/proc/{deployment.processes[0].pid}/status").read_text()
    line = next(line for line in status.splitlines() if line.startswith("VmHWM:"))
    return int(line.split()[1]) * 1024


def test_an_anonymous_200_mb_post_is_refused_before_its_body_is_sent(server):
    before = peak_rss(server)
    request = RawRequest(server, {"Content-Type": "application/json", "Content-Length": str(HUGE)})
    request.send(b"x" * MIB)  # and no more: the answer must not wait for the rest

    status, headers, body = request.response(timeout=10)
    request.close()

    assert status == 413
    assert headers["content-type"] == "application/json"
    assert json.loads(body) == {
        "detail": f"Request body is over the limit of {LIMIT} bytes",
        "code": "request_too_large",
    }
    assert peak_rss(server) - before < 32 * MIB


def test_a_chunked_body_is_refused_when_it_crosses_the_limit_and_the_rest_is_not_read(server):
    before = peak_rss(server)
    request = RawRequest(
        server, {"Content-Type": "application/json", "Transfer-Encoding": "chunked"}
    )
    chunk = b"x" * MIB
    while request.sent < HUGE and request.send(b"%x\r\n%s\r\n" % (len(chunk), chunk)):
        pass

    status, _, body = request.response(timeout=30)
    request.close()

    assert (status, json.loads(body)["code"]) == (413, "request_too_large")
    # What the socket buffers on both sides held when the answer came is all the rest.
    assert request.sent < LIMIT + 32 * MIB
    assert peak_rss(server) - before < 32 * MIB


def test_a_body_under_the_limit_reaches_the_application_whole(server):
    filler = "x" * (4 * MIB - 4096)
    source = f"goal: {filler}\nsteps:\n  - {{id: only, description: Keep the goal, tool: noop}}\n"

    response = httpx.post(
        f"{server.base}/api/v1/compile",
        json={"format": "yaml", "source": source},
        headers={"Authorization": f"Bearer {server.tokens['ada']}"},
        timeout=60,
    )

    assert response.status_code == 200, response.text
    assert response.json()["ok"] is True
