"""``{% review_link %}``: the topbar's link to the approval queue, with the number of
items waiting for the user, for those who may approve (nothing for anyone else)."""

from __future__ import annotations

from typing import Any

from django import template

from reviews.queue import waiting_count

register = template.Library()


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
        "current": match is not None and match.namespace == "review",
    }
