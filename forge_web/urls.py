"""Forge's URL map: the home page now; the API and apps mount here as they land."""

from django.urls import path

from forge_web import views

urlpatterns = [
    path("", views.home, name="home"),
]
