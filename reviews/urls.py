"""The review pages, namespace ``review``: the approval queue at ``/review/`` and a run's
replan view, which keeps its address beside the run (``/runs/<id>/replans/``)."""

from django.urls import path

from reviews import views

app_name = "review"

urlpatterns = [
    path("review/", views.queue, name="queue"),
    path("runs/<int:run_id>/replans/", views.replans, name="replans"),
    path("inbox/", views.inbox_page, name="inbox"),
    path("inbox/<int:item_id>/open/", views.inbox_open, name="inbox-open"),
    path(
        "inbox/calls/<int:held_call_id>/decide/", views.inbox_decide_call, name="inbox-decide-call"
    ),
    path("inbox/settings/", views.notification_settings, name="notification-settings"),
    path("inbox/webhooks/", views.webhooks_page, name="webhooks"),
]
