"""Import limits: what a plan document may be before Forge refuses to read it.

Each limit has its own error code, and each refusal names the limit and its value.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from forge.errors import PlanDocumentError

__all__ = [
    "DEFAULT_LIMITS",
    "ID_PATTERN",
    "ImportLimits",
    "check_depth",
    "check_id",
    "too_deep",
]

ID_PATTERN = re.compile(r"[A-Za-z0-9_.-]{1,64}")


@dataclass(frozen=True)
class ImportLimits:
    max_bytes: int = 4 * 1024 * 1024
    max_steps: int = 5000
    max_depth: int = 32

    def check_size(self, size: int) -> None:
        if size > self.max_bytes:
            raise PlanDocumentError(
                f"document is {size} bytes, over the limit of {self.max_bytes} bytes (max_bytes)",
                code="document_too_large",
            )

    def check_step_count(self, count: int) -> None:
        if count > self.max_steps:
            raise PlanDocumentError(
                f"document has {count} steps, over the limit of {self.max_steps} steps (max_steps)",
                code="too_many_steps",
            )


DEFAULT_LIMITS = ImportLimits()


def check_id(value: object, path: str) -> str:
    if not isinstance(value, str) or not ID_PATTERN.fullmatch(value):
        raise PlanDocumentError(
            f"{path}: {value!r} is not a valid step id "
            "(1 to 64 characters of letters, digits, '_', '.', '-')",
            code="invalid_id",
            path=path,
        )
    return value


def check_depth(data: Any, max_depth: int) -> None:
    """Refuse data nested deeper than ``max_depth`` containers, without recursion."""
    stack: list[tuple[Any, int]] = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict):
            children: Any = value.values()
        elif isinstance(value, list):
            children = value
        else:
            continue
        if depth > max_depth:
            raise too_deep(max_depth)
        stack.extend((child, depth + 1) for child in children)


def too_deep(max_depth: int) -> PlanDocumentError:
    """The error for data nested past ``max_depth``; parsers raise it too, before any data."""
    return PlanDocumentError(
        f"document is nested deeper than the limit of {max_depth} levels (max_depth)",
        code="document_too_deep",
    )
