from django.apps import AppConfig


class RunsConfig(AppConfig):
    name = "runs"

    def ready(self) -> None:
        from django.core import checks

        from runs.checks import sandbox_check

        checks.register(sandbox_check)

        from plans.models import PlanVersion
        from plans.signals import version_approved
        from runs import queue, tasks

        # The queue sits below the tasks it queues (they call the worker, which calls the
        # engine, which calls the queue): it is handed them here rather than importing them.
        queue.plug(
            queue.EntryPoints(tasks.run_step, tasks.replan_run, tasks.resume_approved_replan)
        )
        version_approved.connect(queue.on_version_approved, sender=PlanVersion)

        from runs import tracing

        # Each web and worker process traces when OTEL_EXPORTER_OTLP_ENDPOINT is set.
        tracing.configure()
