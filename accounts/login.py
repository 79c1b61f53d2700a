"""The login page: the password form, "Sign in with SSO", or both, as configured.

With FORGE_PASSWORD_LOGIN=0 the form is not shown and a password POST is refused (403
``password_login_disabled``) before any password is looked at, so nothing is counted
against the account either; single sign-on and API tokens still work.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import views as auth_views
from django.http import HttpRequest, HttpResponse

from accounts.sso_settings import login_methods, password_login_enabled

PASSWORD_LOGIN_DISABLED = "password_login_disabled"


class LoginView(auth_views.LoginView):
    redirect_authenticated_user = True

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        return {**super().get_context_data(**kwargs), **login_methods()}

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not password_login_enabled():
            context = self.get_context_data(
                login_error={
                    "code": PASSWORD_LOGIN_DISABLED,
                    "message": "Password login is switched off on this site; sign in with SSO.",
                }
            )
            return self.render_to_response(context, status=403)
        return super().post(request, *args, **kwargs)
