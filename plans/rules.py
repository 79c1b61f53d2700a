"""The deployment's approval rules (SPEC section 10) and the judgement of a stored version
under them.

The rules in force are the newest rules version admins changed under four eyes on the
Rules page or the API (``plans.rules_changes``), else the file ``FORGE_APPROVAL_RULES``
names (``forge.rules/v1``, JSON or YAML), read once per process and checked at start-up
by ``plans.checks`` (a bad file is ``forge.E002`` with its line and field, a team that
does not exist too); without the setting, four eyes alone (one person other than the
author). A file that turns bad while the process runs is refused where it is used, so
approvals fail closed rather than pass under no rules.

``version_judgement`` counts a version's approvals since its latest rejection or changes
request (a stop voids the approvals before it: someone must approve again) from its
stored impact, the summary its review card shows; the gate judges the same way at a
run's start, from the graph it compiles.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from forge.rules import FOUR_EYES, Approver, Judgement, RuleSet, RulesInvalid, Subject, judge
from forge.rules.reader import read_rules, rules_from_data
from plans.impact import version_impact
from plans.models import Approval, Decision, PlanVersion, RulesStatus, RulesVersion

__all__ = [
    "approvals_in_force",
    "current_rules",
    "file_rules",
    "judgement_view",
    "rules_in_force",
    "rules_view",
    "shown_judgement",
    "version_judgement",
]


def current_rules() -> RuleSet:
    """The rules every judgement uses now."""
    return rules_in_force()[1]


def rules_in_force() -> tuple[int, RuleSet]:
    """The rules in force and their version: the newest rules version a second admin
    approved (``plans.rules_changes``), else the file (version 0)."""
    latest = (
        RulesVersion.objects.filter(status=RulesStatus.IN_FORCE)
        .order_by("-number")
        .values_list("number", "data")
        .first()
    )
    if latest is not None:
        return latest[0], rules_from_data(latest[1])
    return 0, file_rules(str(getattr(settings, "FORGE_APPROVAL_RULES", "") or ""))


@cache
def file_rules(path: str) -> RuleSet:
    """The rules of the file at ``path`` (four eyes for none); ``ImproperlyConfigured``
    naming the line and field of a bad one."""
    if not path:
        return FOUR_EYES
    try:
        return read_rules(Path(path).read_bytes())
    except OSError as exc:
        raise ImproperlyConfigured(
            f"FORGE_APPROVAL_RULES: cannot read {path}: {exc.strerror or exc}"
        ) from None
    except RulesInvalid as exc:
        raise ImproperlyConfigured(f"FORGE_APPROVAL_RULES {path}: {exc} [{exc.code}]") from None


def approvals_in_force(version: PlanVersion) -> tuple[list[Approval], Approval | None]:
    """The person approvals of ``version`` given after its latest stop (a rejection or a
    changes request), oldest first, and that stop if it is the latest decision."""
    # Sorted here rather than in SQL, so that a page that prefetched
    # ``approvals__reviewer`` for many versions asks nothing more.
    decisions = sorted(version.approvals.all(), key=lambda row: (row.created_at, row.pk))
    counted: list[Approval] = []
    for decision in decisions:
        if decision.decision == Decision.APPROVED:
            counted.append(decision)
        else:
            counted = []
    latest = decisions[-1] if decisions else None
    stop = latest if latest is not None and latest.decision != Decision.APPROVED else None
    return counted, stop


def version_judgement(version: PlanVersion, rules: RuleSet | None = None) -> Judgement | None:
    """The rules matching ``version``'s impact, each with who counts toward it; ``None``
    for a version with compile errors (no impact to match)."""
    impact = version_impact(version)
    if impact is None:
        return None
    counted, stop = approvals_in_force(version)
    stopped = None
    if stop is not None:
        verb = "rejected" if stop.decision == Decision.REJECTED else "sent back for changes"
        stopped = f"{verb} by {stop.reviewer_name}"
    return judge(
        current_rules() if rules is None else rules,
        Subject.of_impact(impact),
        author=version.author.get_username(),
        approvals=[
            Approver(row.reviewer_name, tuple(row.teams)) for row in counted if not row.by_policy
        ],
        stopped=stopped,
    )


def shown_judgement(version: PlanVersion, rules: RuleSet | None = None) -> Judgement | None:
    """``version_judgement`` under ``rules`` (else the current ones), once per version
    object (an answer or a page reads it several times; a page of many versions passes
    the rules it read once)."""
    if "_forge_judgement" not in version.__dict__:
        version.__dict__["_forge_judgement"] = version_judgement(version, rules)
    return version.__dict__["_forge_judgement"]  # type: ignore[no-any-return]


def rules_view(version: PlanVersion, rules: RuleSet | None = None) -> dict[str, Any] | None:
    """Plain data for ``plans/_rules.html``: each matching rule, with what it lacks."""
    return judgement_view(shown_judgement(version, rules))


def judgement_view(judgement: Judgement | None) -> dict[str, Any] | None:
    """A version's or a step's judgement as ``plans/_rules.html`` shows it."""
    if judgement is None:
        return None
    return {
        "rules": [
            # "needs 1 of finance": the row already names the rule.
            {**rule.to_data(), "lacking": (rule.lacking() or "").removeprefix(f"rule {rule.id} ")}
            for rule in judgement.rules
        ],
        "not_counted": list(judgement.not_counted),
        "stopped": judgement.stopped,
        "approved": judgement.approved,
    }
