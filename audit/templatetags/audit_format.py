"""Number formats for the audit and metrics pages: ``1,000,038`` and ``2.4 s``."""

from __future__ import annotations

from django import template

register = template.Library()


@register.filter
def num(value: object) -> str:
    """An integer with thousands separators; anything else as it is."""
    if isinstance(value, bool) or not isinstance(value, int):
        return "" if value is None else str(value)
    return f"{value:,}"


@register.filter
def seconds(milliseconds: object) -> str:
    """A duration given in milliseconds, in the unit that reads best."""
    if not isinstance(milliseconds, int | float):
        return ""
    if milliseconds < 1000:
        return f"{milliseconds:.0f} ms"
    if milliseconds < 60_000:
        return f"{milliseconds / 1000:.1f} s"
    return f"{milliseconds / 60_000:.1f} min"
