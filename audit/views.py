"""The audit trail page: filter and page through the trail, see the chain's state, export
what the filters select, and walk the whole chain on demand. Needs ``audit.view``.

The page reads ``audit.browse`` (keyset pages newest first) and
``audit.services.chain_state`` (the chain from its latest checkpoint, a bounded walk per
view); the export links are the API's own ``/api/v1/audit/export`` with the same
filters, which a logged-in browser may call. "Verify the whole chain" is a POST that
walks every row and checks the anchor log (``services.walk_now``, as
``POST /api/v1/audit/verify`` does): seconds for a million rows, so it is a button for
holders of ``audit.verify`` (operators, admins), one walk at a time across processes and
not within ``FORGE_AUDIT_VERIFY_INTERVAL`` of the last (``audit.walk_lock``). The form posts
here rather than to the API so that it works without JavaScript; both take the same lock.

``audit`` may not import ``accounts`` (sibling floors): the permission is asked of the
user model itself, ``request.user.can("audit.view")`` (accounts.roles).
"""

from __future__ import annotations

import json
from datetime import UTC
from typing import Any
from urllib.parse import parse_qsl, urlencode

from django import forms
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_POST

from audit import browse, services, vocabulary, walk_lock
from audit.models import AuditEvent
from audit.visibility import shows_arguments, without_arguments
from forge.ids import MAX_ID

READ_PERMISSION = "audit.view"
VERIFY_PERMISSION = "audit.verify"
FILTER_FIELDS = ("actor", "action", "object_type", "object_id", "since", "until")
EXCLUDE_FIELDS = ("exclude_actor", "exclude_action")
# "Hide logins": the events every login and logout adds, which drown the rest.
LOGIN_ACTIONS = ("user.logged_in", "user.logged_out")


def _ensure(request: HttpRequest, permission: str) -> None:
    if not request.user.can(permission):  # type: ignore[union-attr]
        raise PermissionDenied(request.user.refusal(permission))  # type: ignore[union-attr]


def _ensure_reader(request: HttpRequest) -> None:
    _ensure(request, READ_PERMISSION)


class UTCDateTimeInput(forms.DateTimeInput):
    input_type = "datetime-local"

    def __init__(self) -> None:
        super().__init__(format="%Y-%m-%dT%H:%M:%S")


class ManyValues(forms.Field):
    """A repeated query parameter (``?exclude_action=a&exclude_action=b``): its values."""

    widget = forms.SelectMultiple

    def to_python(self, value: Any) -> tuple[str, ...]:
        values = value if isinstance(value, list | tuple) else [value] if value else []
        cleaned = [str(item).strip()[:200] for item in values]
        return tuple(dict.fromkeys(item for item in cleaned if item))[:50]


class FilterForm(forms.Form):
    """The page's filters; times are UTC (the trail's own), ``until`` exclusive. Actions
    and object types are picked from those the trail holds, actors and object ids typed
    with the existing ones offered (datalists); all match without regard to case."""

    actor = forms.CharField(
        required=False, max_length=200, strip=True,
        widget=forms.TextInput(attrs={"list": "actor-choices", "autocomplete": "off"}),
    )  # fmt: skip
    action = forms.CharField(required=False, max_length=100, strip=True, widget=forms.Select)
    object_type = forms.CharField(required=False, max_length=100, strip=True, widget=forms.Select)
    object_id = forms.CharField(
        required=False, max_length=200, strip=True,
        widget=forms.TextInput(attrs={"list": "object-id-choices", "autocomplete": "off"}),
    )  # fmt: skip
    since = forms.DateTimeField(required=False, widget=UTCDateTimeInput())
    until = forms.DateTimeField(required=False, widget=UTCDateTimeInput())
    exclude_action = ManyValues(required=False, label="Leave out actions")
    exclude_actor = ManyValues(
        required=False, label="Leave out actors", widget=forms.SelectMultiple
    )

    def offer(self, known: vocabulary.Vocabulary) -> None:
        """Let the selects pick from the values the trail holds (and the one asked for)."""
        asked = self.data if self.is_bound else {}
        for name, values, anything in (
            ("action", known.actions, "Any action"),
            ("object_type", known.object_types, "Any object"),
        ):
            current = str(asked.get(name, "") or "")
            choices = [("", anything), *((value, value) for value in values)]
            if current and current not in values:
                choices.append((current, current))
            self.fields[name].widget.choices = choices
        for name, values in (("exclude_action", known.actions), ("exclude_actor", known.actors)):
            current = asked.getlist(name) if hasattr(asked, "getlist") else []
            extra = [value for value in current if value not in values]
            self.fields[name].widget.choices = [(v, v) for v in (*values, *extra)]

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        for name in ("since", "until"):
            if data.get(name) is not None:
                data[name] = data[name].astimezone(UTC)
        since, until = data.get("since"), data.get("until")
        if since is not None and until is not None and since >= until:
            self.add_error("until", "Until must be after since.")
        return data

    def filters(self) -> browse.Filters:
        data = self.cleaned_data
        return browse.Filters(
            **{name: data.get(name) or None for name in FILTER_FIELDS},
            **{name: tuple(data.get(name) or ()) for name in EXCLUDE_FIELDS},
        )


@require_GET
def trail(request: HttpRequest) -> HttpResponse:
    _ensure_reader(request)
    form = FilterForm(request.GET or None)
    known = vocabulary.vocabulary()
    form.offer(known)
    filters = form.filters() if form.is_valid() else browse.Filters()
    # ?seq=N: the page whose first row is N (or the newest match older than N).
    target = _cursor(request, "seq")
    before = target + 1 if target is not None and target < MAX_ID else _cursor(request, "before")
    after = None if target is not None else _cursor(request, "after")
    if form.is_bound and not form.is_valid():
        page = browse.Page([], None, None, 0, False)
    else:
        page = browse.page(filters, before=before, after=after)
    query = _query(filters)
    state = services.chain_state()
    arguments = shows_arguments(request.user)
    context = {
        "form": form,
        "filters": filters,
        "page": page,
        "rows": [_row(event, state, filters, target, arguments) for event in page.rows],
        "known": known,
        "object_ids": vocabulary.recent_object_ids(filters.object_type or ""),
        "hide_logins": ""
        if _hides_logins(filters)
        else _query(filters, exclude_action=(*filters.exclude_action, *LOGIN_ACTIONS)),
        "shows_arguments": arguments,
        "query": query,
        "state": state,
        "target": target,
        "first_page": before is None and after is None,
        "export_jsonl": _export_url("jsonl", query),
        "export_csv": _export_url("csv", query),
        "can_verify": request.user.can(VERIFY_PERMISSION),  # type: ignore[union-attr]
        "filter_pairs": parse_qsl(query),
        "walk_limit": services.STATE_WALK_LIMIT,
        "cap": browse.COUNT_CAP,
    }
    return render(request, "audit/trail.html", context)


@require_POST
def verify(request: HttpRequest) -> HttpResponse:
    """Walk the whole chain now (unless a walk runs or just finished) and show its verdict."""
    _ensure(request, VERIFY_PERMISSION)
    try:
        result = services.walk_now(request.user.get_username())
    except walk_lock.WalkRefused as refused:
        if refused.code == "verify_running":
            messages.info(
                request, "A full walk of the chain is running: its verdict shows below soon."
            )
        else:
            walk = services.latest_full_walk()
            when = _ago(walk.checked_at) if walk is not None else "moments ago"
            messages.info(request, f"The whole chain was walked {when}: see below.")
    else:
        walk = services.latest_full_walk()
        seconds = (walk.duration_ms / 1000) if walk is not None else 0.0
        if result.ok:
            messages.success(
                request,
                f"Walked the whole chain: {result.verified_through:,} rows intact "
                f"({seconds:.1f} s).",
            )
        elif result.broken_at is not None:
            messages.error(
                request,
                f"The chain is broken at seq {result.broken_at}: {result.reason}.",
            )
        else:
            messages.error(request, f"The chain cannot be trusted: {result.reason}.")
    back = reverse("audit:trail")
    query = request.POST.get("query", "")
    return redirect(f"{back}?{query}" if query and "\n" not in query else back)


def _cursor(request: HttpRequest, name: str) -> int | None:
    value = request.GET.get(name, "")
    if value.isdigit() and len(value) <= 19 and 1 <= int(value) <= MAX_ID:
        return int(value)
    return None


def _query(filters: browse.Filters, **changes: Any) -> str:
    """The filters (with ``changes``) as a query string (times as the form writes them)."""
    pairs = []
    for name in FILTER_FIELDS:
        value = changes.get(name, getattr(filters, name))
        if value:
            text = value.strftime("%Y-%m-%dT%H:%M:%S") if name in ("since", "until") else value
            pairs.append((name, text))
    for name in EXCLUDE_FIELDS:
        for value in dict.fromkeys(changes.get(name, getattr(filters, name))):
            pairs.append((name, value))
    return urlencode(pairs)


def _hides_logins(filters: browse.Filters) -> bool:
    left_out = {value.casefold() for value in filters.exclude_action}
    return all(action in left_out for action in LOGIN_ACTIONS)


def _export_url(fmt: str, query: str) -> str:
    # The API reads naive times as UTC, as the page does.
    url = f"{reverse('api:export_events')}?{urlencode({'format': fmt})}"
    return f"{url}&{query}" if query else url


def _row(
    event: AuditEvent,
    state: services.ChainState,
    filters: browse.Filters,
    target: int | None,
    arguments: bool,
) -> dict[str, Any]:
    # An auditor reads the trail without plan arguments (audit.visibility).
    payload = event.payload if arguments else without_arguments(event.payload)[0]
    return {
        "event": event,
        "by_actor": _query(filters, actor=event.actor),
        "by_action": _query(filters, action=event.action),
        "by_object": _query(filters, object_type=event.object_type, object_id=event.object_id),
        "target": event.seq == target,
        "summary": _summary(payload),
        "pretty": json.dumps(payload, indent=2, sort_keys=True, ensure_ascii=False),
        "broken": state.broken_at == event.seq,
        "unverified": state.ok and event.seq > state.verified_through,
    }


def _summary(payload: Any) -> str:
    if not isinstance(payload, dict) or not payload:
        return ""
    parts = []
    for key in sorted(payload):
        value = payload[key]
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        parts.append(f"{key}: {text}")
    line = " · ".join(parts)
    return line if len(line) <= 120 else line[:119] + "…"


def _ago(moment: Any) -> str:
    seconds = int((timezone.now() - moment).total_seconds())
    return "just now" if seconds < 5 else f"{seconds} s ago"
