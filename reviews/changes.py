"""Which earlier version a version's review card compares it with (``Bases``: the last
version an approver saw, and the last approved one for drift); the diff as the lines it
shows is ``forge.plan.diff_text.change_lines``. Read-only."""

from __future__ import annotations

from dataclasses import dataclass

from plans.models import Approval, PlanVersion, VersionStatus

__all__ = ["Bases", "bases_for"]


@dataclass(frozen=True)
class Bases:
    """What a version's card compares it with.

    ``seen`` is the last version an approver saw: the newest earlier version of the plan
    that a person decided on (approved, rejected or sent back with changes requested; a
    policy's approval is no person's), or else the newest earlier version that was
    submitted for review and compiled (one superseded before anyone decided), or else
    none: the card says it is the first version to review. Its diff, impact changes and
    threads' context are against ``seen``. ``approved`` is the newest earlier approved
    version: drift (the constraints it drops) is measured from what may run, whatever
    an approver saw since."""

    seen: PlanVersion | None = None
    why: str = ""  # what became of ``seen``: "approved", "superseded before anyone decided"
    approved: PlanVersion | None = None


SEEN_WHY = {
    VersionStatus.APPROVED: "approved",
    VersionStatus.REJECTED: "rejected",
    VersionStatus.CHANGES_REQUESTED: "changes requested",
    VersionStatus.SUPERSEDED: "superseded before anyone decided",
}


def bases_for(versions: list[PlanVersion]) -> dict[int, Bases]:
    """Each version's ``Bases``, in three queries whatever the number of versions."""
    if not versions:
        return {}
    earlier: dict[int, list[tuple[int, int, str]]] = {}  # plan: (number, pk, status), oldest first
    for plan_id, number, pk, status in (
        PlanVersion.objects.filter(
            plan_id__in={version.plan_id for version in versions}, submitted=True, has_errors=False
        )
        .order_by("plan_id", "number")
        .values_list("plan_id", "number", "pk", "status")
    ):
        earlier.setdefault(plan_id, []).append((number, pk, status))
    decided = set(
        Approval.objects.filter(
            version_id__in=[pk for rows in earlier.values() for _, pk, _ in rows],
            reviewer__isnull=False,
        ).values_list("version_id", flat=True)
    )
    chosen: dict[int, tuple[int | None, str, int | None]] = {}
    for version in versions:
        before = [row for row in earlier.get(version.plan_id, []) if row[0] < version.number]
        seen = [row for row in before if row[1] in decided] or before
        approved = [pk for _, pk, status in before if status == VersionStatus.APPROVED]
        chosen[version.pk] = (
            seen[-1][1] if seen else None,
            SEEN_WHY.get(seen[-1][2], "") if seen else "",
            approved[-1] if approved else None,
        )
    loaded = PlanVersion.objects.in_bulk(
        {pk for seen, _, approved in chosen.values() for pk in (seen, approved) if pk}
    )
    return {
        pk: Bases(loaded.get(seen or 0), why, loaded.get(approved or 0))
        for pk, (seen, why, approved) in chosen.items()
    }
