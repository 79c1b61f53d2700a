"""Approval rules (``forge.rules/v1``, SPEC section 10) as frozen values: who must approve
a version or a step, decided from what the compiler knows it touches.

A ``RuleSet`` is a list of ``Rule``s and a ``default``; a rule matches a ``Subject`` (the
facts of a version's or a step's impact) when every key of its ``when`` holds (keys AND,
the values of one key OR), and asks for ``require.approvals`` distinct people, only
members of ``require.team`` when it names one. The default applies when no rule matches.
"""

from __future__ import annotations

from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any

from forge.rules.subject import Subject

__all__ = ["DEFAULT_ID", "FOUR_EYES", "SCHEMA", "Condition", "Requirement", "Rule", "RuleSet"]

SCHEMA = "forge.rules/v1"
DEFAULT_ID = "default"


@dataclass(frozen=True)
class Requirement:
    """``approvals`` distinct people other than the author, from ``team`` when set."""

    approvals: int = 1
    team: str | None = None

    def needs_people(self) -> bool:
        """Whether no policy may stand in for people here: a team, or more than one."""
        return self.team is not None or self.approvals > 1

    def to_data(self) -> dict[str, Any]:
        data: dict[str, Any] = {"approvals": self.approvals}
        if self.team is not None:
            data["team"] = self.team
        return data


@dataclass(frozen=True)
class Condition:
    """A rule's ``when``: each key given must hold; an empty condition matches all."""

    side_effect: tuple[str, ...] = ()
    tool: tuple[str, ...] = ()  # globs, as are server, scope and host
    server: tuple[str, ...] = ()
    scope: tuple[str, ...] = ()
    host: tuple[str, ...] = ()
    cost_over: float | None = None
    tokens_over: int | None = None
    steps_over: int | None = None

    def matches(self, subject: Subject) -> bool:
        if self.side_effect and not set(self.side_effect) & subject.side_effects:
            return False
        for globs, names in (
            (self.tool, subject.tools),
            (self.server, subject.servers),
            (self.scope, subject.scopes),
            (self.host, subject.hosts),
        ):
            if globs and not any(fnmatchcase(name, glob) for glob in globs for name in names):
                return False
        if self.cost_over is not None and not subject.cost > self.cost_over:
            return False
        if self.tokens_over is not None and not subject.tokens > self.tokens_over:
            return False
        return self.steps_over is None or subject.steps > self.steps_over

    def to_data(self) -> dict[str, Any]:
        data: dict[str, Any] = {}
        for key in ("side_effect", "tool", "server", "scope", "host"):
            if getattr(self, key):
                data[key] = list(getattr(self, key))
        for key in ("cost_over", "tokens_over", "steps_over"):
            if getattr(self, key) is not None:
                data[key] = getattr(self, key)
        return data


@dataclass(frozen=True)
class Rule:
    id: str
    description: str = ""
    when: Condition = Condition()
    require: Requirement = Requirement()

    def to_data(self) -> dict[str, Any]:
        data: dict[str, Any] = {"id": self.id}
        if self.description:
            data["description"] = self.description
        when = self.when.to_data()
        if when:
            data["when"] = when
        data["require"] = self.require.to_data()
        return data


@dataclass(frozen=True)
class RuleSet:
    rules: tuple[Rule, ...] = ()
    default: Requirement = Requirement()

    def matching(self, subject: Subject) -> tuple[Rule, ...]:
        """The rules ``subject`` must satisfy: those that match it, else the default
        (as a rule named ``default``)."""
        found = tuple(rule for rule in self.rules if rule.when.matches(subject))
        if found:
            return found
        return (Rule(DEFAULT_ID, "when no rule matches", Condition(), self.default),)

    def teams(self) -> tuple[str, ...]:
        """Every team the rules name, once each, in order."""
        named = [rule.require.team for rule in self.rules] + [self.default.team]
        return tuple(dict.fromkeys(team for team in named if team is not None))

    def to_data(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "rules": [rule.to_data() for rule in self.rules],
            "default": self.default.to_data(),
        }


# No rules at all: four eyes, one person other than the author, as before rules existed.
FOUR_EYES = RuleSet()
