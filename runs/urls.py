"""The run pages (``runs.views``), mounted at /runs/ by forge_web.urls."""

from __future__ import annotations

from django.urls import path

from runs import views

app_name = "runs"

urlpatterns = [
    path("", views.run_list, name="list"),
    path("new/", views.new_run, name="new"),
    path("<int:run_id>/", views.run_detail, name="detail"),
]
