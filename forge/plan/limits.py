"""Import limits: what a plan document may be before Forge refuses to read it.

Each limit has its own error code, and each refusal names the limit and its value.
Bytes bound what a parser reads, but not the work it does: four MiB of ``1,1,1,...`` are
two million values. ``max_nodes`` bounds that work, and every reader counts nodes as it
goes and stops at the first one over (``docs/security.md``, Abuse limits).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from forge.errors import PlanDocumentError

__all__ = [
    "DEFAULT_LIMITS",
    "ID_PATTERN",
    "MIN_NODE_LIMIT",
    "NODES_PER_STEP",
    "QUANTITY_LIMIT",
    "ImportLimits",
    "check_id",
    "check_shape",
    "too_deep",
]

ID_PATTERN = re.compile(r"[A-Za-z0-9_.-]{1,64}")

# The most any count or amount in a plan may be (tokens, cost, seconds, budgets, retries):
# a trillion is past any real estimate, and the sums over 100,000 steps stay finite floats
# and fit a 64-bit integer, where 1e308 twice made the impact summary's sum overflow.
QUANTITY_LIMIT = 10**12


# A step as rich as the specification's example (id, description, dependencies, tool,
# args, tools_allowed, a done_when with checks, timeout, retries, rollback hint) is about
# 35 nodes; 50 leaves room for larger arguments while keeping the most a parser may be
# made to read near a quarter of a million nodes, which libyaml's events pass in well
# under a second (bench/import_limits.py).
NODES_PER_STEP = 50
MIN_NODE_LIMIT = 10_000  # so that a small step limit still allows a few large arguments


@dataclass(frozen=True)
class ImportLimits:
    """``max_nodes`` counts every key, value, list and mapping of the document's data, a
    YAML alias as the nodes it repeats; None derives it from ``max_steps``.

    ``bytes_setting`` and ``steps_setting`` name what sets the size and step limits where
    these limits come from (the web's ``FORGE_MAX_PLAN_BYTES``, the CLI's ``--max-steps``),
    so that each refusal tells whoever is refused what to change. The derived node limit
    is the step limit's: its refusal names ``steps_setting``.

    A plan over the step limit is refused as ``too_many_steps`` even where a reader
    passes the node limit first: the node limit is 50 nodes for each step allowed, so
    ordinary steps (about 35 nodes as rich as SPEC's example) fill it only once they are
    more than the steps allowed. A reader that stops at the first node over counts the
    steps then, as cheaply as it can, and refuses the plan for its length when it can
    tell; ``too_many_nodes`` is left for plans of too few steps to be over that limit.
    """

    max_bytes: int = 4 * 1024 * 1024
    max_steps: int = 5000
    max_depth: int = 32
    max_nodes: int | None = None
    bytes_setting: str = ""
    steps_setting: str = ""

    @property
    def node_limit(self) -> int:
        if self.max_nodes is not None:
            return self.max_nodes
        return max(self.max_steps * NODES_PER_STEP, MIN_NODE_LIMIT)

    def named(self, limit: str) -> str:
        """``limit`` (``max_bytes``, ``max_steps`` or ``max_nodes``) and, when known, the
        setting that sets it: what a refusal puts in brackets."""
        setting = {
            "max_bytes": self.bytes_setting,
            "max_steps": self.steps_setting,
            "max_nodes": self.steps_setting if self.max_nodes is None else "",
        }[limit]
        return f"{limit}; {setting} sets it" if setting else limit

    def check_size(self, size: int) -> None:
        if size > self.max_bytes:
            raise PlanDocumentError(
                f"document is {size} bytes, over the limit of {self.max_bytes} bytes "
                f"({self.named('max_bytes')})",
                code="document_too_large",
            )

    def check_step_count(self, count: int, *, at_least: bool = False) -> None:
        """Refuse ``count`` steps over the limit; ``at_least``: a reader that stopped
        early counted that many so far."""
        if count > self.max_steps:
            raise PlanDocumentError(
                f"document has {'at least ' if at_least else ''}{count} steps, over the "
                f"limit of {self.max_steps} steps ({self.named('max_steps')})",
                code="too_many_steps",
            )

    def too_many_nodes(self) -> PlanDocumentError:
        """The error for the first node over ``node_limit``; readers raise it the moment
        they count that node (adding where it is when they know)."""
        return PlanDocumentError(
            f"document has more than {self.node_limit} nodes (keys, values, lists and "
            f"mappings), over the limit of {self.node_limit} ({self.named('max_nodes')})",
            code="too_many_nodes",
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


def check_shape(data: Any, limits: ImportLimits) -> None:
    """Refuse data nested deeper than ``max_depth`` containers or holding more than
    ``node_limit`` nodes, without recursion.

    Children are counted before they are stacked, so data far over the limit costs no
    more than data at it; a value shared by several places (a YAML alias) counts at each.
    """
    budget = limits.node_limit - 1  # the root
    if budget < 0:
        raise limits.too_many_nodes()
    stack: list[tuple[Any, int]] = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict):
            children: Any = value.values()
            budget -= 2 * len(value)  # each key and its value
        elif isinstance(value, list):
            children = value
            budget -= len(value)
        else:
            continue
        if depth > limits.max_depth:
            raise too_deep(limits.max_depth)
        if budget < 0:
            raise limits.too_many_nodes()
        stack.extend((child, depth + 1) for child in children)


def too_deep(max_depth: int) -> PlanDocumentError:
    """The error for data nested past ``max_depth``; parsers raise it too, before any data."""
    return PlanDocumentError(
        f"document is nested deeper than the limit of {max_depth} levels (max_depth)",
        code="document_too_deep",
    )
