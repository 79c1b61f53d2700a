"""The review pages: the approval queue (``/review/``), a run's replan view
(``/runs/<id>/replans/``), my inbox (``/inbox/``) and its settings, and the webhooks
(``/inbox/webhooks/``, admins).

Like the other pages they read (``reviews.queue``) and render; decisions go from the
browser through the API (``POST .../approve|reject`` with a comment), which checks again
who may decide. The pages hand their scripts the documents and diffs the graphs need
through ``json_script``; every word of a plan reaches the page through the template's
escaping or ``textContent``.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from accounts.permissions import ensure_permission
from forge.errors import ForgeError
from forge.ids import MAX_ID
from gateway import held as gateway_held
from gateway.models import HeldCall
from plans.views import STATUS_LABELS
from reviews import configuration, inbox, step_values
from reviews import queue as review
from reviews.models import (
    KIND_CHOICES,
    MAX_COMMENT,
    Notification,
    NotificationPreference,
    Webhook,
    WebhookDelivery,
    WebhookFormat,
)
from reviews.notifications import kinds_for
from reviews.replan_story import replan_story
from reviews.signals import KINDS
from runs.models import RUN_STATUS_LABELS, Run

# Why a step waits when its event gave no reason (the queue's card says the same).
POLICY_PAUSE = "the run's policy asks for approval"
# How a failed step's status reads in a sentence.
FAILURE_WORDS = {
    "invalid": "broke its contract",
    "failed": "failed",
    "needs_reconciliation": "was interrupted",
}


@require_GET
def queue(request: HttpRequest) -> HttpResponse:
    user = request.user
    if not (user.can("plan.approve") or user.can("step.approve")):
        raise PermissionDenied("The review queue is for approvers: it needs the approver role.")
    found = review.queue_for(user)
    graphs = {
        item["key"]: {
            "plan": item["plan"],
            "number": item["number"],
            "baseline": item["baseline"],
            "from": item.pop("baseline_document"),
            "to": item.pop("document"),
            "diff": item["diff"],
            "pauses": item["pauses"],
        }
        for item in found.versions
    }
    # A waiting step's details: the step as written, the values a run gave its arguments,
    # and why it waits.
    steps = {
        item["key"]: {
            "step": item.pop("document_step"),
            "resolved": item.pop("resolved"),
            "pauses": [{"step": item["step"], "reasons": item["reasons"] or [POLICY_PAUSE]}],
        }
        for item in found.steps
    }
    page_data = {"api": reverse("api:api-root"), "graphs": graphs, "steps": steps}
    context = {
        "queue": found,
        "total": len(found.versions) + len(found.steps) + len(found.milestones) + len(found.calls),
        "page_data": page_data,
        "run_labels": RUN_STATUS_LABELS,
    }
    return render(request, "review/queue.html", context)


@require_GET
def replans(request: HttpRequest, run_id: int) -> HttpResponse:
    ensure_permission(request.user, "run.view")
    if run_id > MAX_ID:
        raise Http404("no such run")
    run = get_object_or_404(Run.objects.select_related("plan", "version", "started_by"), pk=run_id)
    story = replan_story(run)
    replan_list = story["replans"]
    selected = _selected(request.GET.get("replan"), len(replan_list))
    for replan in replan_list:
        failure = replan["failure"]
        failure["verb"] = (
            "was rejected"
            if failure["event"] == "step_rejected"
            else FAILURE_WORDS.get(failure["status"], "failed")
        )
    for version in [*story["versions"], *story["newer"]]:
        version["status_label"] = STATUS_LABELS.get(version["status"], version["status"])
    versions = {version["number"]: version for version in story["versions"]}
    page_data = {
        "run": {"id": run.pk, "status": run.status, "plan": run.plan_id},
        "documents": {str(number): version["document"] for number, version in versions.items()},
        # "kept" repeats "outputs" for the template; the script reads "outputs".
        "replans": [
            {k: v for k, v in replan.items() if k not in ("kept", "proposals")}
            for replan in replan_list
        ],
        "statuses": story["statuses"],
        # For the step details: each version's pauses, and the values this run gave the
        # arguments its steps take from earlier steps.
        "pauses": {str(number): version["pauses"] for number, version in versions.items()},
        "resolved": {
            str(number): step_values.run_values(run.pk, number, version["document"])
            for number, version in versions.items()
        },
        "selected": selected,
        "urls": {"run": reverse("runs:detail", kwargs={"run_id": run.pk})},
    }
    context = {
        "run": run,
        "status_label": RUN_STATUS_LABELS.get(run.status, run.status),
        "lineage": _lineage(story, versions),
        "replans": replan_list,
        "selected": selected,
        "story": story,
        "max_replans": run.version.document.get("max_replans", 3),
        "page_data": page_data,
    }
    for version in story["versions"]:
        version.pop("document", None)  # in page_data once; the template needs no copy
    return render(request, "review/replans.html", context)


def _selected(value: str | None, count: int) -> int:
    """The replan ``?replan=N`` names (1-based), else the latest; 0 when there is none."""
    if value and value.isdigit() and 1 <= int(value) <= count:
        return int(value)
    return count


def _lineage(story: dict[str, Any], versions: dict[int, dict[str, Any]]) -> list[dict[str, Any]]:
    """Versions and the replans between them, in the order the run went through them."""
    entries: list[dict[str, Any]] = []
    numbers = [version["number"] for version in story["versions"]]
    if numbers:
        entries.append({"kind": "version", "version": versions[numbers[0]], "first": True})
    for replan in story["replans"]:
        entries.append({"kind": "replan", "replan": replan})
        if replan["to"] is not None and replan["to"] in versions:
            entries.append({"kind": "version", "version": versions[replan["to"]]})
    if story["pending"]:
        entries.append({"kind": "waiting", "newer": story["newer"]})
    return entries


# --- Inbox, notification settings, webhooks --------------------------------------------


@require_http_methods(["GET", "POST"])
def inbox_page(request: HttpRequest) -> HttpResponse:
    """My inbox; POST marks items read (``ids``, or every item with ``all``) or unread."""
    user = request.user
    if request.method == "POST":
        ids = None if request.POST.get("all") else _ids(request.POST.getlist("ids"))
        changed = inbox.mark_read(user, ids, unread=request.POST.get("unread") == "1")
        messages.success(request, f"{changed} item{'s' if changed != 1 else ''} marked.")
        return redirect("review:inbox")
    unread_only = request.GET.get("show") == "unread"
    items = inbox.items_for(user, unread_only=unread_only)
    calls = inbox.held_calls_of(items)
    context = {
        "items": [(item, calls.get(item.held_call_id or 0)) for item in items],
        "unread": inbox.unread_count(user),
        "unread_only": unread_only,
        "waiting": review.waiting_count(user),
    }
    return render(request, "review/inbox.html", context)


@require_POST
def inbox_decide_call(request: HttpRequest, held_call_id: int) -> HttpResponse:
    """Approve or reject a held call from its inbox card (``decision``, ``comment``): the
    gateway's decision, as ``POST /api/v1/gateway/calls/{id}/approve|reject`` makes it."""
    decision, comment = request.POST.get("decision"), request.POST.get("comment", "")
    if decision not in ("approve", "reject"):
        messages.error(request, "Choose approve or reject.")
        return redirect("review:inbox")
    if len(comment) > MAX_COMMENT:
        messages.error(request, f"A comment has at most {MAX_COMMENT} characters.")
        return redirect("review:inbox")
    if not HeldCall.objects.filter(pk=held_call_id).exists():
        raise Http404("no such held call")
    decide = gateway_held.approve if decision == "approve" else gateway_held.reject
    try:
        held = decide(held_call_id, request.user, comment)
    except ForgeError as refused:  # its own call, decided already, rules unsatisfied
        messages.error(request, f"Held call {held_call_id}: {refused}")
        return redirect("review:inbox")
    words = {
        "approved": "approved: it runs once, when the agent asks again",
        "rejected": "rejected",
    }.get(held.status, "approval counted; it waits for others")
    messages.success(request, f"Held call {held.pk} ({held.tool}) {words}.")
    return redirect("review:inbox")


@require_GET
def inbox_open(request: HttpRequest, item_id: int) -> HttpResponse:
    """Open an inbox item: it is marked read and the exact page it names opens."""
    item = get_object_or_404(Notification, pk=item_id, recipient_id=request.user.pk)
    inbox.mark_read(request.user, [item.pk])
    if not url_has_allowed_host_and_scheme(item.url, allowed_hosts=None):
        raise Http404("no such page")
    return redirect(item.url)


def _ids(values: list[str]) -> list[int]:
    return [int(value) for value in values if value.isdigit() and int(value) <= MAX_ID]


@require_http_methods(["GET", "POST"])
def notification_settings(request: HttpRequest) -> HttpResponse:
    user = request.user
    if request.method == "POST":
        kinds = [kind for kind in request.POST.getlist("kinds") if kind in KINDS]
        configuration.save_preferences(user, kinds, request.POST.get("email") == "on")
        messages.success(request, "Notification settings saved.")
        return redirect("review:notification-settings")
    row = NotificationPreference.objects.filter(user=user).first()
    chosen = set(kinds_for(user))
    context = {
        "kinds": [(kind, label, kind in chosen) for kind, label in KIND_CHOICES],
        "email": True if row is None else row.email,
        "address": user.email,
    }
    return render(request, "review/notification_settings.html", context)


@require_http_methods(["GET", "POST"])
def webhooks_page(request: HttpRequest) -> HttpResponse:
    """Admins configure the webhooks here and read their delivery log."""
    ensure_permission(request.user, "notification.manage")
    if request.method == "POST":
        return _webhook_action(request)
    return _webhooks(request)


def _webhooks(request: HttpRequest, *, typed: dict[str, Any] | None = None) -> HttpResponse:
    """The page; ``typed``: a new webhook's fields as sent, kept after a refusal (400)."""
    hooks = list(Webhook.objects.all())
    deliveries = list(WebhookDelivery.objects.select_related("webhook")[:100])
    context = {
        "hooks": hooks,
        "deliveries": deliveries,
        "kinds": KIND_CHOICES,
        "formats": WebhookFormat.choices,
        "allowed_hosts": settings.FORGE_WEBHOOK_ALLOWED_HOSTS,
        "attempts": settings.FORGE_WEBHOOK_ATTEMPTS,
        "typed": typed or {"name": "", "url": "", "kinds": [], "format": "forge"},
    }
    return render(request, "review/webhooks.html", context, status=400 if typed else 200)


def _webhook_action(request: HttpRequest) -> HttpResponse:
    action = request.POST.get("action", "")
    user = request.user
    try:
        if action == "create":
            hook = configuration.create_webhook(
                user, request.POST.get("name", ""), request.POST.get("url", "").strip(),
                request.POST.getlist("kinds"), request.POST.get("format", "forge"),
            )  # fmt: skip
            messages.success(
                request,
                f"Webhook {hook.name} saved. Its signing secret, shown only now: {hook.secret}",
            )
        else:
            hook_id = request.POST.get("webhook", "")
            hook = get_object_or_404(Webhook, pk=int(hook_id) if hook_id.isdigit() else 0)
            if action == "delete":
                configuration.delete_webhook(user, hook)
                messages.success(request, f"Webhook {hook.name} deleted.")
            elif action == "toggle":
                configuration.update_webhook(user, hook, active=not hook.active)
                messages.success(
                    request, f"Webhook {hook.name} switched {'off' if hook.active else 'on'}."
                )
            elif action == "rotate":
                hook = configuration.update_webhook(user, hook, rotate_secret=True)
                messages.success(
                    request, f"New signing secret for {hook.name}, shown only now: {hook.secret}"
                )
            else:
                messages.error(request, f"Unknown action {action!r}.")
    except ForgeError as error:
        messages.error(request, f"{error.message} ({error.code})")
        if action == "create":  # the page again, with what was typed
            fields = ("name", "url", "format")
            typed = {field: request.POST.get(field, "") for field in fields}
            return _webhooks(request, typed={**typed, "kinds": request.POST.getlist("kinds")})
    return redirect("review:webhooks")
