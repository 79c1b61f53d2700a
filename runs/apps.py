from django.apps import AppConfig


class RunsConfig(AppConfig):
    name = "runs"

    def ready(self) -> None:
        from django.core import checks

        from runs.checks import sandbox_check

        checks.register(sandbox_check)

        from plans.models import PlanVersion
        from plans.signals import version_approved

        version_approved.connect(_resume_replans, sender=PlanVersion)


def _resume_replans(sender: object, *, version_id: int, approver: str, **kwargs: object) -> None:
    """A person approved a version: if a planner proposed it for runs of ``replan: auto``,
    a worker resumes them (one task; it does nothing for other versions)."""
    from plans.models import PlannerProposal
    from runs.tasks import resume_approved_replan

    if PlannerProposal.objects.filter(version_id=version_id, run_id__isnull=False).exists():
        resume_approved_replan.enqueue(version_id, approver)
