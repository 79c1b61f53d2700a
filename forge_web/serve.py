"""Serve Forge's ASGI application with uvicorn, configured for Forge.

``python -m forge_web.serve [--host HOST] [--port PORT]`` is the one web server command:
``manage.py forge_serve`` runs it next to the workers, a scale-out deployment runs as many
as it likes, and the integration tests start it. Why uvicorn and not daphne: daphne reads
a whole request body before the application sees any of it, so no limit can refuse a
200 MB upload before it is in memory; uvicorn hands the body over as it arrives and
reads no further than the application asks (``forge_web.body_limit`` then refuses it).

What is set, and why (every other option is uvicorn's default):

- proxy headers off unless ``FORGE_FORWARDED_ALLOW_IPS`` names the proxies to trust:
  uvicorn would otherwise take the client address from ``X-Forwarded-For`` sent by any
  local process, and login throttling counts failures per client address;
- websockets by the ``websockets`` library (uvicorn's sans-I/O protocol; its older one
  is deprecated), pinged every 20 s (a dead client is dropped within 40 s), with client
  messages of at most 64 KiB (Forge's clients send none), and no per-message
  compression: deflating every event once per watcher made a crowd CPU-bound;
- the lifespan protocol on: it builds the MCP tools' endpoint and starts its session
  manager (``forge_web.mcp_startup``) on the first ``/mcp`` request, which waits for
  it, and a failure to start it is logged and answered with 503 at ``/mcp`` only;
- no ``Server`` header, and at most 10 s for open connections to finish when stopping.
"""

from __future__ import annotations

import argparse
import os
from typing import Any

__all__ = ["WS_MAX_BYTES", "main", "options"]

WS_MAX_BYTES = 64 * 1024
GRACEFUL_SHUTDOWN_SECONDS = 10


def options(host: str, port: int, forwarded_allow_ips: list[str]) -> dict[str, Any]:
    """``uvicorn.Config``'s keyword arguments for Forge."""
    return {
        "app": "forge_web.asgi:application",
        "host": host,
        "port": port,
        "proxy_headers": bool(forwarded_allow_ips),
        "forwarded_allow_ips": forwarded_allow_ips or None,
        "ws": "websockets-sansio",
        "ws_max_size": WS_MAX_BYTES,
        # Compressing each frame for each watcher costs a crowd more CPU than it saves on
        # small JSON events over a LAN (bench/crowd.py).
        "ws_per_message_deflate": False,
        "ws_ping_interval": 20.0,
        "ws_ping_timeout": 20.0,
        "lifespan": "on",
        "server_header": False,
        "timeout_graceful_shutdown": GRACEFUL_SHUTDOWN_SECONDS,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m forge_web.serve", description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    args = parser.parse_args(argv)

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "forge_web.settings")
    import uvicorn
    from django.conf import settings

    uvicorn.run(**options(args.host, args.port, settings.FORGE_FORWARDED_ALLOW_IPS))


if __name__ == "__main__":
    main()
