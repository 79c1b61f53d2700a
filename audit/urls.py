"""The audit page (``audit.views``), mounted at /audit/ by forge_web.urls."""

from __future__ import annotations

from django.urls import path

from audit import views

app_name = "audit"

urlpatterns = [
    path("", views.trail, name="trail"),
    path("verify/", views.verify, name="verify"),
]
