from django.apps import AppConfig


class GatewayConfig(AppConfig):
    name = "gateway"

    def ready(self) -> None:
        # Here, not at import: the collector reads models, which exist only once apps are.
        from gateway.prometheus import HeldCallsCollector
        from runs.prometheus import REGISTRY

        REGISTRY.register(HeldCallsCollector())
