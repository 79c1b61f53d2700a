"""Approval rules (SPEC section 10): who must approve a version or a step, from what the
compiler knows it touches. ``read_rules`` reads a ``forge.rules/v1`` document,
``RuleSet.matching`` picks the rules a ``Subject`` must satisfy, ``judge`` counts the
approvals toward them.

The reader (and with it PyYAML) is imported on first use (PEP 562, as ``forge.runners``
does), so the gate, which imports the rules, costs ``forge run`` no YAML import."""

from __future__ import annotations

from forge.rules.document import (
    DEFAULT_ID,
    FOUR_EYES,
    SCHEMA,
    Condition,
    Requirement,
    Rule,
    RuleSet,
)
from forge.rules.errors import RulesInvalid
from forge.rules.judgement import Approver, Judgement, RuleStatus, judge
from forge.rules.subject import Subject

__all__ = [
    "DEFAULT_ID",
    "FOUR_EYES",
    "SCHEMA",
    "Approver",
    "Condition",
    "Judgement",
    "Requirement",
    "Rule",
    "RuleSet",
    "RuleStatus",
    "RulesInvalid",
    "Subject",
    "judge",
    "read_rules",
    "rules_from_data",
]


def __getattr__(name: str) -> object:
    if name in ("read_rules", "rules_from_data"):
        from forge.rules import reader

        return getattr(reader, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
