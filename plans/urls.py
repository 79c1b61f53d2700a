"""The plan pages (``plans.views``), mounted at /plans/ by forge_web.urls."""

from __future__ import annotations

from django.urls import path

from plans import rules_views, views

app_name = "plans"

urlpatterns = [
    path("", views.plan_list, name="list"),
    path("new/", views.new_plan, name="new"),
    path("generate/", views.generate, name="generate"),
    path("draw/", views.draw, name="draw"),
    path("rules/", rules_views.rules_page, name="rules"),
    path("rules/<int:number>/approve/", rules_views.approve_rules, name="approve-rules"),
    path("<int:plan_id>/", views.plan_detail, name="detail"),
    path("<int:plan_id>/edit/", views.edit, name="edit"),
    path("<int:plan_id>/versions/", views.history, name="versions"),
    path("<int:plan_id>/versions/<int:number>/", views.version_detail, name="version"),
    path("<int:plan_id>/diff/", views.diff, name="diff"),
]
