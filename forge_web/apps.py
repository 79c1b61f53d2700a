"""The top floor as a Django app: it connects the floors below, which may not import each other."""

from __future__ import annotations

from django.apps import AppConfig


class ForgeWebConfig(AppConfig):
    name = "forge_web"
    verbose_name = "Forge web"

    def ready(self) -> None:
        from forge_web import access_hooks, audit_hooks  # noqa: F401  (connect the receivers)
