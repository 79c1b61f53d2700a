"""Runs of approved plan versions: the run, its steps per version, every event, and the
execution records with their artifacts.

``RunEvent`` is the source of truth: a run's state is the fold of its events
(``forge.runtime.apply_event``). ``Run`` and ``StepRun`` are projections kept in the same
transaction as the events that change them, so lists and pages read one row instead of
folding a history, and workers claim steps with a compare-and-swap on ``StepRun``.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from forge.runtime import RUN_STATUSES, STEP_STATUSES

# What a person reads for each of forge.runtime's RUN_STATUSES (pages, inbox, mail).
RUN_STATUS_LABELS = {
    "queued": "Queued",
    "running": "Running",
    "awaiting_approval": "Awaiting approval",
    "needs_replan": "Needs replan",
    "succeeded": "Succeeded",
    "failed": "Failed",
    "budget_exhausted": "Budget exhausted",
    "cancelled": "Cancelled",
}


class Run(models.Model):
    plan = models.ForeignKey("plans.Plan", on_delete=models.PROTECT, related_name="runs")
    version = models.ForeignKey("plans.PlanVersion", on_delete=models.PROTECT, related_name="runs")
    status = models.CharField(max_length=20, choices=[(s, s) for s in RUN_STATUSES])
    started_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="runs"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    used_steps = models.PositiveIntegerField(default=0)
    used_tokens = models.PositiveBigIntegerField(default=0)
    used_cost = models.FloatField(default=0.0)
    replans = models.PositiveIntegerField(default=0)
    failed_step = models.CharField(max_length=64, blank=True)
    reset_steps = models.JSONField(default=list)
    preserved_steps = models.JSONField(default=list)
    blocked_reason = models.TextField(blank=True)
    # Milestones whose review the run waits for (forge.runtime.RunState.awaiting_review).
    awaiting_review = models.JSONField(default=list)
    last_seq = models.PositiveIntegerField(default=0)
    # A re-run (runs.services.rerun_run): the run it re-ran and the steps chosen to run
    # again (the run_started event's facts say what it kept).
    rerun_of = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="reruns"
    )
    rerun_steps = models.JSONField(default=list)
    # The W3C traceparent of the span of the version the run runs (runs.tracing): every
    # step's span, on any worker, is its child, so a run is one trace. Empty when the
    # process that started the run did not trace.
    trace_context = models.CharField(max_length=128, blank=True)
    # Who executes the run's MCP tool steps: Forge's workers, or the agent that started
    # it, through the gateway (SPEC section 11; runs.executors).
    executor = models.CharField(
        max_length=10, choices=[("worker", "worker"), ("agent", "agent")], default="worker"
    )

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["status"]),
            models.Index(fields=["created_at"]),
            models.Index(fields=["finished_at"], name="run_finished_at"),  # runs.metrics
        ]

    def __str__(self) -> str:
        return f"run {self.pk} of {self.plan_id} v{self.version_id}"


class StepRun(models.Model):
    """One step of one plan version within a run, with its lease while a worker runs it."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="steps")
    plan_version = models.PositiveIntegerField()
    step_id = models.CharField(max_length=64)
    position = models.PositiveIntegerField()  # topological position in its version
    status = models.CharField(max_length=24, choices=[(s, s) for s in STEP_STATUSES])
    attempt = models.PositiveIntegerField(default=0)
    tool_name = models.CharField(max_length=100, blank=True)
    args_hash = models.CharField(max_length=64, blank=True)
    output = models.JSONField(null=True, blank=True)
    error = models.TextField(blank=True)
    verdict = models.JSONField(null=True, blank=True)
    tokens = models.PositiveBigIntegerField(default=0)
    cost = models.FloatField(default=0.0)
    reserved_tokens = models.PositiveBigIntegerField(default=0)
    reserved_cost = models.FloatField(default=0.0)
    approved_hash = models.CharField(max_length=64, blank=True)
    approved_by = models.CharField(max_length=150, blank=True)
    approval_signature = models.CharField(max_length=64, blank=True)
    # What the attempt that settled the step left for review (RunEvent.artifacts): a
    # failed step keeps its logs.
    artifacts = models.JSONField(default=list)
    lease_owner = models.CharField(max_length=100, blank=True)
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    fencing_token = models.PositiveBigIntegerField(default=0)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    latency_ms = models.FloatField(null=True, blank=True)

    class Meta:
        ordering = ["run_id", "plan_version", "position"]
        constraints = [
            models.UniqueConstraint(
                fields=["run", "plan_version", "step_id"], name="one_step_run_per_version"
            )
        ]
        indexes = [
            models.Index(fields=["status", "lease_expires_at"]),
            # runs.metrics: the latencies of the steps finished in a period, from the index.
            models.Index(fields=["finished_at", "latency_ms"], name="steprun_finished_latency"),
        ]


class RunEvent(models.Model):
    """One transition, with seed 003's fields; ``seq`` is gapless per run."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="events")
    seq = models.PositiveIntegerField()
    plan_id = models.CharField(max_length=64)
    plan_version = models.PositiveIntegerField()
    step_id = models.CharField(max_length=64, null=True, blank=True)
    event_type = models.CharField(max_length=40)
    transition = models.JSONField(null=True, blank=True)  # [from, to]
    step_status = models.CharField(max_length=24, null=True, blank=True)
    blocked_reason = models.TextField(blank=True)
    facts = models.JSONField(null=True, blank=True)
    artifacts = models.JSONField(default=list)
    tool_name = models.CharField(max_length=100, blank=True)
    tool_args_hash = models.CharField(max_length=64, blank=True)
    permission_scope = models.CharField(max_length=100, blank=True)
    side_effect = models.CharField(max_length=16, blank=True)
    latency_ms = models.FloatField(null=True, blank=True)
    tokens = models.BigIntegerField(default=0)
    cost = models.FloatField(default=0.0)
    model = models.CharField(max_length=100, blank=True)
    verdict = models.JSONField(null=True, blank=True)
    actor = models.CharField(max_length=150, blank=True)
    created_at = models.DateTimeField()

    class Meta:
        ordering = ["run_id", "seq"]
        constraints = [models.UniqueConstraint(fields=["run", "seq"], name="gapless_seq_per_run")]
        # runs.metrics: the approvals requested in a period.
        indexes = [models.Index(fields=["event_type", "created_at"], name="runevent_type_created")]


class ExecutionRecord(models.Model):
    """What one attempt of one step did (forge.runtime.ExecutionRecord), kept for review."""

    id = models.CharField(primary_key=True, max_length=32)
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="records")
    step_id = models.CharField(max_length=64)
    attempt = models.PositiveIntegerField()
    tool = models.CharField(max_length=100)
    args_hash = models.CharField(max_length=64)
    status = models.CharField(max_length=10)
    error = models.TextField(blank=True)
    error_code = models.CharField(max_length=64, blank=True)
    exit_code = models.IntegerField(null=True, blank=True)
    isolation = models.CharField(max_length=20, blank=True)
    notes = models.JSONField(default=list)
    started_at = models.DateTimeField()
    latency_ms = models.FloatField()
    tokens = models.BigIntegerField(default=0)
    cost = models.FloatField(default=0.0)

    class Meta:
        ordering = ["started_at"]
        indexes = [models.Index(fields=["run", "step_id"])]


class Artifact(models.Model):
    record = models.ForeignKey(ExecutionRecord, on_delete=models.CASCADE, related_name="artifacts")
    name = models.CharField(max_length=200)
    media_type = models.CharField(max_length=100)
    content = models.BinaryField()
    size = models.PositiveBigIntegerField()
    truncated = models.BooleanField(default=False)

    class Meta:
        ordering = ["id"]


class StepApproval(models.Model):
    """A person's decision on a step waiting for approval, bound to the arguments' hash."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="step_approvals")
    step_id = models.CharField(max_length=64)
    plan_version = models.PositiveIntegerField()
    args_hash = models.CharField(max_length=64)
    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="step_approvals"
    )
    decision = models.CharField(max_length=10)
    comment = models.TextField(blank=True)
    # The reviewer's teams when they decided: approval rules count them. An approval
    # that the rules matching the step do not find enough yet is kept here (the step
    # keeps waiting) and counted with the next ones for the same arguments and preview.
    teams = models.JSONField(default=list, blank=True)
    preview_hash = models.CharField(max_length=64, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
