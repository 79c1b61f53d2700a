"""The topbar's review links: ``{% review_link %}`` to the approval queue, with the number
of items waiting for the user, for those who may approve (nothing for anyone else);
``{% inbox_link %}`` to the user's inbox with its unread count, kept live by
``static/forge/js/inbox.js`` over ``/ws/inbox/``."""

from __future__ import annotations

from typing import Any

from django import template

from reviews.inbox import unread_count
from reviews.queue import waiting_count

register = template.Library()

QUEUE_PAGES = frozenset({"queue", "replans"})


@register.inclusion_tag("review/_nav_link.html", takes_context=True)
def review_link(context: template.Context) -> dict[str, Any]:
    request = context.get("request")
    user = getattr(request, "user", None)
    match = getattr(request, "resolver_match", None)
    shown = bool(
        user is not None
        and user.is_authenticated
        and (user.can("plan.approve") or user.can("step.approve"))
    )
    return {
        "shown": shown,
        "count": waiting_count(user) if shown else 0,
        "current": match is not None
        and match.namespace == "review"
        and match.url_name in QUEUE_PAGES,
    }


@register.inclusion_tag("review/_inbox_link.html", takes_context=True)
def inbox_link(context: template.Context) -> dict[str, Any]:
    request = context.get("request")
    user = getattr(request, "user", None)
    match = getattr(request, "resolver_match", None)
    shown = bool(user is not None and user.is_authenticated)
    return {
        "shown": shown,
        "count": unread_count(user) if shown else 0,
        "current": match is not None
        and match.namespace == "review"
        and match.url_name not in QUEUE_PAGES,
    }
