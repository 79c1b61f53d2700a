"""What a reader of the trail may see of a payload: an ``auditor`` reads the trail without
plan arguments (SPEC section 7).

Whoever may read plans (``plan.view``) may read their arguments wherever they show, the
trail included; anyone else (an auditor) gets every value under an argument-bearing key
replaced by ``HIDDEN``, at any depth: in the page, the API and the exports alike. The
stored row is unchanged, so a hidden payload no longer matches the row's hash: an export
marks such records (``payload_redacted``), and a reader who must recompute hashes needs a
role that may read plans.
"""

from __future__ import annotations

from typing import Any

ARGUMENTS_PERMISSION = "plan.view"
HIDDEN = "[hidden: plan arguments]"
# Keys under which a payload carries a plan's arguments or what they produced: a step's
# args, an agent's tool arguments, a document or its source text, outputs and previews.
ARGUMENT_KEYS = frozenset(
    {
        "args",
        "arguments",
        "argv",
        "body",
        "content",
        "document",
        "env",
        "facts",
        "inputs",
        "output",
        "preview",
        "query",
        "source",
    }
)


def shows_arguments(user: Any) -> bool:
    """Whether ``user`` may read plan arguments in the trail (audit may not import
    accounts: the user model answers ``can``, see accounts.roles)."""
    return bool(getattr(user, "is_authenticated", False) and user.can(ARGUMENTS_PERMISSION))


def without_arguments(value: Any) -> tuple[Any, bool]:
    """``value`` with every argument-bearing entry hidden, and whether any was."""
    if isinstance(value, dict):
        hidden = False
        clean = {}
        for key, item in value.items():
            if key in ARGUMENT_KEYS:
                clean[key] = HIDDEN
                hidden = True
            else:
                clean[key], inner = without_arguments(item)
                hidden = hidden or inner
        return clean, hidden
    if isinstance(value, list):
        items = [without_arguments(item) for item in value]
        return [item for item, _ in items], any(inner for _, inner in items)
    return value, False


def payload_for(user: Any, payload: Any) -> Any:
    """The payload as ``user`` may see it."""
    return payload if shows_arguments(user) else without_arguments(payload)[0]
