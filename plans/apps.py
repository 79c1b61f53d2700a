from django.apps import AppConfig


class PlansConfig(AppConfig):
    name = "plans"

    def ready(self) -> None:
        from django.core import checks

        from plans.checks import approval_rules_check, mcp_servers_check

        checks.register(mcp_servers_check)
        checks.register(approval_rules_check)
