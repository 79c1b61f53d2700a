"""Websocket routes of the runs app."""

from django.urls import path

from runs.consumers import RunEventsConsumer

websocket_urlpatterns = [
    path("ws/runs/<int:run_id>/", RunEventsConsumer.as_asgi()),
]
