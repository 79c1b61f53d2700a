"""The plan pages (``plans.views``), mounted at /plans/ by forge_web.urls."""

from __future__ import annotations

from django.urls import path

from plans import views

app_name = "plans"

urlpatterns = [
    path("", views.plan_list, name="list"),
    path("new/", views.new_plan, name="new"),
    path("generate/", views.generate, name="generate"),
    path("draw/", views.draw, name="draw"),
    path("<int:plan_id>/", views.plan_detail, name="detail"),
    path("<int:plan_id>/edit/", views.edit, name="edit"),
    path("<int:plan_id>/versions/", views.history, name="versions"),
    path("<int:plan_id>/versions/<int:number>/", views.version_detail, name="version"),
    path("<int:plan_id>/diff/", views.diff, name="diff"),
]
