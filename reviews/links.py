"""Absolute links to Forge's pages, for what is read away from the site (e-mails, webhook
deliveries): ``FORGE_BASE_URL`` followed by the page's path."""

from __future__ import annotations

from django.conf import settings

__all__ = ["absolute"]


def absolute(path: str) -> str:
    return settings.FORGE_BASE_URL.rstrip("/") + path
