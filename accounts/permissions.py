"""Role and permission checks for API operations and pages (the names: accounts.roles).

For ninja operations, put the decorator *under* the route decorator::

    @router.post("/plans", response={201: PlanOut})
    @require_permission("plan.create")       # or @require_role("author")
    def create_plan(request, body: PlanIn): ...

It runs after authentication and before the view: an anonymous caller gets 401, a
caller without the right 403 ``permission_denied``. Inside a view, for checks that
depend on the object, call ``ensure_permission(request.user, "plan.approve")``. For
pages use ``@role_required("operator")``. All raise Django's ``PermissionDenied``,
which the API maps to JSON and pages render as 403.html.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any, TypeVar

from django.contrib.auth.models import AnonymousUser
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest
from ninja.operation import Operation
from ninja.utils import contribute_operation_callback

from accounts.auth import NotAuthenticated
from accounts.roles import ALL_PERMISSIONS, ROLES, refusal

F = TypeVar("F", bound=Callable[..., Any])


def ensure_role(user: Any, *roles: str) -> None:
    """Raise PermissionDenied unless ``user`` acts with at least one of ``roles``."""
    _check_names(roles, ROLES, "role")
    if not getattr(user, "is_authenticated", False):
        raise NotAuthenticated()
    if not any(user.has_role(role) for role in roles):
        raise PermissionDenied(f"This needs the {' or '.join(roles)} role")


def ensure_permission(user: Any, permission: str) -> None:
    """Raise PermissionDenied unless one of ``user``'s roles grants ``permission``."""
    _check_names((permission,), ALL_PERMISSIONS, "permission")
    if not getattr(user, "is_authenticated", False):
        raise NotAuthenticated()
    if not user.can(permission):
        raise PermissionDenied(refusal(permission))



def require_role(*roles: str) -> Callable[[F], F]:
    """Ninja operation decorator: the caller must act with one of ``roles``."""
    _check_names(roles, ROLES, "role")
    return _guard(lambda user: ensure_role(user, *roles), f"Needs role: {' or '.join(roles)}.")


def require_permission(permission: str) -> Callable[[F], F]:
    """Ninja operation decorator: the caller's roles must grant ``permission``."""
    _check_names((permission,), ALL_PERMISSIONS, "permission")
    return _guard(lambda user: ensure_permission(user, permission), f"Needs {permission}.")


def role_required(*roles: str) -> Callable[[F], F]:
    """Page view decorator: 403 unless the (logged-in) user acts with one of ``roles``."""
    _check_names(roles, ROLES, "role")

    def decorate(view: F) -> F:
        @functools.wraps(view)
        def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> Any:
            ensure_role(request.user, *roles)
            return view(request, *args, **kwargs)

        return wrapper  # type: ignore[return-value]

    return decorate


def _guard(check: Callable[[Any], None], note: str) -> Callable[[F], F]:
    def decorate(func: F) -> F:
        def install(operation: Operation) -> None:
            view = operation.view_func
            if inspect.iscoroutinefunction(view):

                @functools.wraps(view)
                async def guarded_async(request: HttpRequest, *args: Any, **kwargs: Any) -> Any:
                    check(_caller(request))
                    return await view(request, *args, **kwargs)

                operation.view_func = guarded_async
            else:

                @functools.wraps(view)
                def guarded(request: HttpRequest, *args: Any, **kwargs: Any) -> Any:
                    check(_caller(request))
                    return view(request, *args, **kwargs)

                operation.view_func = guarded
            operation.description = f"{operation.description or ''}\n\n{note}".strip()

        operation = getattr(func, "_ninja_operation", None)
        if operation is not None:  # placed above the route decorator
            install(operation)
        else:
            contribute_operation_callback(func, install)
        return func

    return decorate


def _caller(request: HttpRequest) -> Any:
    return getattr(request, "auth", None) or getattr(request, "user", None) or AnonymousUser()


def _check_names(names: tuple[str, ...], known: Any, kind: str) -> None:
    if not names:
        raise ValueError(f"name at least one {kind}")
    for name in names:
        if name not in known:
            raise ValueError(f"unknown {kind} {name!r}")
