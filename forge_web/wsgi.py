"""WSGI entry point, for hosts without websockets."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "forge_web.settings")
application = get_wsgi_application()

from forge_web.warmup import warm_up  # noqa: E402  (needs Django set up first)

warm_up()
