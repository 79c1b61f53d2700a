from django.apps import AppConfig


class ReviewsConfig(AppConfig):
    """People deciding: the approval queue and the replan view. Above runs and plans,
    whose data it reads; decisions go through their services."""

    name = "reviews"
