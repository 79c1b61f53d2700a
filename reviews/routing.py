"""Websocket routes of the reviews app."""

from django.urls import path

from reviews.consumers import InboxConsumer

websocket_urlpatterns = [
    path("ws/inbox/", InboxConsumer.as_asgi()),
]
