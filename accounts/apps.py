from django.apps import AppConfig
from django.db.backends.signals import connection_created


class AccountsConfig(AppConfig):
    name = "accounts"

    def ready(self) -> None:
        from accounts.outages import database_connected

        # A new database connection ends an outage of the database (accounts.outages).
        connection_created.connect(database_connected, dispatch_uid="forge-database-back")
