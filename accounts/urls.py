"""Login, logout, single sign-on and the API token page."""

from __future__ import annotations

from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_not_required
from django.urls import path

from accounts import views
from accounts.login import LoginView
from accounts.sso_views import SsoCallbackView, SsoStartView

urlpatterns = [
    path("login/", LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    # The provider's redirect URI is <site>/accounts/sso/callback/ (docs/deployment.md).
    path("sso/login/", login_not_required(SsoStartView.as_view()), name="sso-login"),
    path("sso/callback/", login_not_required(SsoCallbackView.as_view()), name="sso-callback"),
    path("tokens/", views.tokens, name="tokens"),
    path("teams/", views.teams_page, name="teams"),
    path("tokens/<int:token_id>/revoke/", views.revoke_token, name="revoke-token"),
]
