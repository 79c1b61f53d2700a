"""Typed readers of environment variables, raising ImproperlyConfigured on bad values.

Every variable Forge reads is listed in docs/configuration.md; the readers here only
parse, so a typo in a value stops the process at start-up instead of at first use.
"""

from __future__ import annotations

import os
import re

from django.core.exceptions import ImproperlyConfigured

from forge.netguard import AddressAllowList

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def envbool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name} must be a boolean (1/0, true/false), not {raw!r}")


def envint(
    name: str, default: int, *, minimum: int | None = None, maximum: int | None = None
) -> int:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be an integer, not {raw!r}") from None
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"{name} must be at least {minimum}, not {value}")
    if maximum is not None and value > maximum:
        raise ImproperlyConfigured(f"{name} must be at most {maximum}, not {value}")
    return value


def envfloat(name: str, default: float, *, minimum: float | None = None) -> float:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be a number, not {raw!r}") from None
    if value != value or value in (float("inf"), float("-inf")):
        raise ImproperlyConfigured(f"{name} must be a finite number, not {raw!r}")
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"{name} must be at least {minimum}, not {value}")
    return value


def envstr(name: str, default: str) -> str:
    return os.environ.get(name, default)


def envlist(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None:
        return default
    return [item.strip() for item in raw.split(",") if item.strip()]


def envhosts(name: str) -> list[str]:
    """A host allow list (``envlist``) whose address entries (``10.0.0.5``, ``[::1]:8080``,
    ``10.0.0.0/8``) are valid, as ``forge.netguard`` reads them."""
    hosts = envlist(name, [])
    try:
        AddressAllowList.parse(hosts)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name} is not an allow list: {exc}") from None
    return hosts


def envchoice(name: str, default: str, choices: tuple[str, ...]) -> str:
    value = os.environ.get(name, default).strip()
    if value not in choices:
        raise ImproperlyConfigured(f"{name} must be one of {', '.join(choices)}, not {value!r}")
    return value


_RATE = re.compile(r"[1-9][0-9]*/([1-9][0-9]*)?(s|sec|m|min|h|hour|d|day)")


def envrate(name: str, default: str) -> str:
    """A request rate, ``"<requests>/<period>"`` (``600/min``, ``20/10s``), or "" for none."""
    value = os.environ.get(name, default).strip().replace(" ", "")
    if value and not _RATE.fullmatch(value):
        raise ImproperlyConfigured(
            f"{name} must be a rate such as 600/min or 20/10s (periods s, m, h, d), "
            f"or empty for no limit, not {value!r}"
        )
    return value
