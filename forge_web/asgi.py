"""ASGI entry point: HTTP through Django (and /static/ unless a proxy serves it) behind
the request body limit, the MCP tools at /mcp (``forge_web.mcp``, built and its session
manager started once the lifespan protocol has started: ``forge_web.mcp_startup``),
websockets through Channels. Served by uvicorn (``python -m forge_web.serve``)."""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "forge_web.settings")
django_asgi_app = get_asgi_application()

from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402  (needs Django first)
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402
from django.conf import settings  # noqa: E402
from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler  # noqa: E402

from forge_web.body_limit import BodyLimit  # noqa: E402

# A body over the limit is refused before Django reads any of it (forge_web.body_limit).
http_app = BodyLimit(
    ASGIStaticFilesHandler(django_asgi_app) if settings.FORGE_SERVE_STATIC else django_asgi_app,
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE,
)

from accounts.websockets import WebsocketAuthStack  # noqa: E402
from forge_web.mcp_startup import DeferredMcp  # noqa: E402
from reviews.routing import websocket_urlpatterns as review_routes  # noqa: E402
from runs.routing import websocket_urlpatterns as run_routes  # noqa: E402

# Agents' MCP tools; their calls go into Django as API requests with the agent's token.
# The MCP SDK is imported on the first /mcp request, not before (forge_web.mcp_startup).
mcp_endpoint = DeferredMcp(django_asgi_app)

application = ProtocolTypeRouter(
    {
        "http": mcp_endpoint.in_front_of(http_app),
        "lifespan": mcp_endpoint.lifespan_app(),
        # A bearer token or the session, and only from this site's origins (ALLOWED_HOSTS).
        "websocket": AllowedHostsOriginValidator(
            WebsocketAuthStack(URLRouter([*run_routes, *review_routes]))
        ),
    }
)

from forge_web.warmup import warm_up  # noqa: E402

warm_up()  # load every router and the compiler now, then freeze the start-up heap
