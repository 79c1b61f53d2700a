"""Who a name names: Forge compares people's names as they write them, without
surrounding spaces and regardless of case, so ``ADA`` and `` ada`` are Ada. The gate's
four eyes and the approval rules' counting of distinct people both ask here."""

from __future__ import annotations

__all__ = ["person_key", "same_person"]


def person_key(name: str) -> str:
    """The one spelling of ``name`` that equal names share."""
    return name.strip().casefold()


def same_person(first: str, second: str) -> bool:
    """Whether two names name one person: compared without surrounding spaces and
    regardless of case (``casefold``)."""
    return person_key(first) == person_key(second)
