from django.apps import AppConfig


class RunsConfig(AppConfig):
    name = "runs"

    def ready(self) -> None:
        from django.core import checks

        from runs.checks import sandbox_check

        checks.register(sandbox_check)
