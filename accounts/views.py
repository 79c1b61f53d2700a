"""The page where users create and revoke their own API tokens, and admins' Teams page.

A new token's value is rendered in the response to the POST that created it and never
again: it is not stored, not put in the session, and the page is marked no-store.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.models import Group
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST

from accounts import services, teams
from accounts.forms import TokenForm
from accounts.models import ApiToken
from accounts.permissions import ensure_permission


@never_cache
@require_http_methods(["GET", "POST"])
def tokens(request: HttpRequest) -> HttpResponse:
    form = TokenForm(request.POST or None)
    new_token = None
    status = 200
    if request.method == "POST":
        if form.is_valid():
            _, new_token = services.create_token(
                request.user,  # type: ignore[arg-type]
                form.cleaned_data["name"],
                actor=request.user.get_username(),
            )
            form = TokenForm()
            status = 201
        else:
            status = 400
    context = {
        "form": form,
        "new_token": new_token,
        "tokens": ApiToken.objects.filter(user=request.user),  # type: ignore[misc]
    }
    return render(request, "accounts/tokens.html", context, status=status)


@require_POST
def revoke_token(request: HttpRequest, token_id: int) -> HttpResponse:
    token = get_object_or_404(ApiToken, pk=token_id, user=request.user)
    services.revoke_token(token, actor=request.user.get_username())
    messages.success(request, f"Token “{token.name}” revoked.")
    return redirect("tokens")


@never_cache
@require_http_methods(["GET", "POST"])
def teams_page(request: HttpRequest) -> HttpResponse:
    """Admins' Teams page: each team with its members; create, set members, delete.
    Every change goes through ``accounts.teams`` (audited), as the API's do."""
    ensure_permission(request.user, "user.manage")
    status = 200
    if request.method == "POST":
        status = _change_team(request)
        if status == 200:
            return redirect("teams")
    groups = Group.objects.order_by("name").prefetch_related("user_set")
    # A refused change shows again as it was typed: the new team's name and members, or
    # the members typed for one team.
    typed = request.POST if status != 200 else {}
    listed = [
        {
            "name": g.name,
            "members": (
                typed.get("members", "")
                if typed.get("action") == "members" and typed.get("name") == g.name
                else " ".join(sorted(u.username for u in g.user_set.all()))
            ),
        }
        for g in groups
    ]
    created = typed if typed.get("action") == "create" else {}
    context = {"teams": listed, "new": {"name": created.get("name", ""),
                                         "members": created.get("members", "")}}  # fmt: skip
    return render(request, "accounts/teams.html", context, status=status)


def _change_team(request: HttpRequest) -> int:
    actor = request.user.get_username()
    action = request.POST.get("action", "")
    members = request.POST.get("members", "").replace(",", " ").split()
    try:
        if action == "create":
            group = teams.create_team(request.POST.get("name", ""), actor=actor, members=members)
            messages.success(request, f"Team “{group.name}” created.")
        elif action == "members":
            group = get_object_or_404(Group, name=request.POST.get("name", ""))
            teams.set_members(group, members, actor=actor)
            messages.success(request, f"Members of “{group.name}” saved.")
        elif action == "delete":
            group = get_object_or_404(Group, name=request.POST.get("name", ""))
            teams.delete_team(group, actor=actor)
            messages.success(request, f"Team “{group.name}” deleted.")
        else:
            messages.error(request, "Unknown action.")
            return 400
    except ValidationError as error:
        messages.error(request, " ".join(error.messages))
        return 400
    return 200
