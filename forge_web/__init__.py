"""The top floor: settings, URLs, ASGI entry and the home page."""
