"""The evaluation pages (``evaluations.views``), mounted at /evaluations/ by forge_web.urls."""

from __future__ import annotations

from django.urls import path

from evaluations import views

app_name = "evaluations"

urlpatterns = [
    path("", views.evaluation_list, name="list"),
    path("compare/", views.compare_page, name="compare"),
    path("<int:evaluation_id>/", views.evaluation_detail, name="detail"),
]
