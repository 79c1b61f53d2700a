from django.apps import AppConfig


class ReviewsConfig(AppConfig):
    """People deciding and being told: the approval queue, the replan view, each person's
    inbox and home, notifications by e-mail and webhook. Above runs and plans, whose data
    it reads and whose signals it listens to; decisions go through their services."""

    name = "reviews"

    def ready(self) -> None:
        from reviews import notifications, resolution

        notifications.connect()
        resolution.connect()
