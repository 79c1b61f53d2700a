"""Whether the approvals a version or a step has satisfy the rules that match it.

The author never counts; each other person counts once, however often they approved,
toward every matching rule they qualify for (any rule without a team, a team rule if
they belong to its team); someone who qualifies for none of them is listed as not
counted, which the card shows as a comment-like approval. A stop (a rejection or a
changes request) ends the version's chances until a new version, whatever was counted.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from forge.people import person_key
from forge.rules.document import Rule, RuleSet
from forge.rules.subject import Subject

__all__ = ["Approver", "Judgement", "RuleStatus", "judge"]


@dataclass(frozen=True)
class Approver:
    """A person's approval as the rules count it: who, and their teams when they gave it."""

    name: str
    teams: tuple[str, ...] = ()

    def label(self) -> str:
        """``ada@finance,leads``, the CLI's spelling (``--approve-as``)."""
        return self.name + ("@" + ",".join(self.teams) if self.teams else "")


@dataclass(frozen=True)
class RuleStatus:
    """One matching rule as reviewers see it (SPEC section 10's fields)."""

    id: str
    description: str
    team: str | None
    required: int
    approved_by: tuple[str, ...]
    satisfied: bool

    def lacking(self) -> str | None:
        """What it still needs, in words ("needs 1 of finance"), or ``None``."""
        if self.satisfied:
            return None
        missing = self.required - len(self.approved_by)
        who = f"of {self.team}" if self.team else ("person" if missing == 1 else "people")
        more = " more" if self.approved_by else ""
        return f"rule {self.id} needs {missing}{more} {who}"

    def to_data(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "description": self.description,
            "team": self.team,
            "required": self.required,
            "approved_by": list(self.approved_by),
            "satisfied": self.satisfied,
        }


@dataclass(frozen=True)
class Judgement:
    rules: tuple[RuleStatus, ...]
    not_counted: tuple[str, ...] = ()  # approved, but qualify for no matching rule
    stopped: str | None = None  # why no approval counts any more ("rejected by bob")
    teams_open: tuple[str, ...] = ()  # the teams of rules not yet satisfied

    @property
    def satisfied(self) -> bool:
        return all(rule.satisfied for rule in self.rules)

    @property
    def approved(self) -> bool:
        return self.stopped is None and self.satisfied

    def lacking(self) -> tuple[str, ...]:
        """Every reason it is not approved, in words."""
        if self.stopped is not None:
            return (self.stopped,)
        return tuple(text for rule in self.rules if (text := rule.lacking()) is not None)

    def open_rules(self) -> tuple[RuleStatus, ...]:
        return tuple(rule for rule in self.rules if not rule.satisfied)

    def can_help(self, name: str, teams: Iterable[str], author: str = "") -> bool:
        """Whether ``name`` (in ``teams``) could bring an open rule closer: they qualify
        for it and do not count toward it yet, and did not write the version. Who is
        asked (queue, inbox, notifications) is decided by this."""
        if self.stopped is not None or (author and person_key(author) == person_key(name)):
            return False
        key, member_of = person_key(name), set(teams)
        return any(
            (rule.team is None or rule.team in member_of)
            and key not in {person_key(who) for who in rule.approved_by}
            for rule in self.open_rules()
        )


def judge(
    rules: RuleSet,
    subject: Subject,
    *,
    author: str,
    approvals: Iterable[Approver],
    stopped: str | None = None,
) -> Judgement:
    """The rules that match ``subject``, each with who counts toward it."""
    people = _distinct(approvals, author)
    matching = rules.matching(subject)
    statuses = []
    counted: set[str] = set()
    for rule in matching:
        names = []
        for key, person in people.items():
            if _qualifies(person, rule):
                names.append(person.name)
                counted.add(key)
        statuses.append(
            RuleStatus(
                id=rule.id,
                description=rule.description,
                team=rule.require.team,
                required=rule.require.approvals,
                approved_by=tuple(names),
                satisfied=len(names) >= rule.require.approvals,
            )
        )
    not_counted = tuple(p.name for key, p in people.items() if key not in counted)
    open_teams = tuple(
        dict.fromkeys(s.team for s in statuses if not s.satisfied and s.team is not None)
    )
    return Judgement(tuple(statuses), not_counted, stopped, open_teams)


def _qualifies(person: Approver, rule: Rule) -> bool:
    team = rule.require.team
    return team is None or team in person.teams


def _distinct(approvals: Iterable[Approver], author: str) -> dict[str, Approver]:
    """Each person once (the first spelling of their name, the union of their teams),
    the author left out."""
    people: dict[str, Approver] = {}
    excluded = person_key(author)
    for approval in approvals:
        key = person_key(approval.name)
        if not key or key == excluded:
            continue
        known = people.get(key)
        if known is None:
            people[key] = Approver(approval.name.strip(), tuple(dict.fromkeys(approval.teams)))
        else:
            teams = tuple(dict.fromkeys(known.teams + approval.teams))
            people[key] = Approver(known.name, teams)
    return people
