"""The page where users create and revoke their own API tokens.

A new token's value is rendered in the response to the POST that created it and never
again: it is not stored, not put in the session, and the page is marked no-store.
"""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST

from accounts import services
from accounts.forms import TokenForm
from accounts.models import ApiToken


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
