"""The fetch hole (issue 29, item 7) at the gateway: a tool annotated read-only but
open-world (here a test server's read_page, which really reads the URL it is given, as
mcp-server-fetch's fetch does) passes unheld only for a URL on FORGE_HTTP_ALLOWED_HOSTS;
a URL off the list is held for a person, and nothing reaches the server meanwhile."""

from __future__ import annotations

import http.server
import json
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gateway.models import HeldCall
from plans import compilation

from .mcp_helpers import answer, conversation
from .mcp_servers import deploy

pytestmark = pytest.mark.django_db(transaction=True)

READER = Path(__file__).resolve().parents[1] / "fixtures" / "mcp_reader_server.py"


class _Page(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 (the standard library's name)
        body = b"quarterly figures"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def page() -> Iterator[str]:
    """A page served on this machine; yields its ``host:port``."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Page)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"127.0.0.1:{server.server_address[1]}"
    server.shutdown()


@pytest.fixture
def reader(settings, tmp_path, page) -> Iterator[Path]:
    log = tmp_path / "reader.jsonl"
    entry = {"command": sys.executable, "args": [str(READER), "--log", str(log)]}
    deploy(settings, tmp_path, reader=entry)
    (tmp_path / "policy.yaml").write_text("allow: {compute: ['*'], mcp.reader: ['*']}\n")
    settings.FORGE_HTTP_ALLOWED_HOSTS = [page]
    settings.FORGE_GATEWAY_HOLD_SECONDS = 0
    yield log
    compilation.toolbox().close()


def read(token: str, url: str) -> Any:
    async def talk(client: Any) -> Any:
        return await client.call_tool("reader.read_page", {"url": url})

    return conversation(token, talk, path="/mcp/gateway")


def reached(log: Path) -> list[str]:
    lines = log.read_text().splitlines() if log.exists() else []
    return [json.loads(line)["args"]["url"] for line in lines]


def test_an_open_world_read_of_an_allowed_host_passes(reader, page, make_user, token_for):
    agent = make_user("agent", "operator")

    result = read(token_for(agent), f"http://{page}/report")

    assert not result.is_error, result.content
    assert result.structured_content == {"status": 200, "text": "quarterly figures"}
    assert reached(reader) == [f"http://{page}/report"]
    assert not HeldCall.objects.exists()


def test_an_open_world_read_of_a_host_off_the_list_is_held_and_not_sent(
    reader, make_user, token_for
):
    agent = make_user("agent", "operator")

    result = read(token_for(agent), "http://169.254.169.254/latest/meta-data/")

    assert result.is_error
    held = HeldCall.objects.get()
    assert answer(result)["error"]["code"] == "approval_pending"
    assert (held.tool, held.side_effect) == ("reader.read_page", "read")
    assert held.annotations == {"readOnlyHint": True, "openWorldHint": True}
    assert reached(reader) == []
