"""Plans and their immutable versions, with the approvals each version received.

A version is never changed after it is saved: an edit, an import or a replan makes a new
one whose ``parent`` is the version it came from. The compiler's diagnostics are stored
with the version (as the core produced them), and so is its impact (what it will touch,
ask, cost and take), so lists and pages never recompile. A new
version never inherits an approval: approvals belong to one version.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models


class Plan(models.Model):
    name = models.CharField(max_length=200)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="plans"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    # The newest version, kept on the plan so lists need no subquery per row.
    latest_version = models.ForeignKey(
        "PlanVersion", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return self.name


class VersionStatus(models.TextChoices):
    DRAFT = "draft"
    HAS_ERRORS = "has_errors"
    AWAITING_APPROVAL = "awaiting_approval"
    APPROVED = "approved"
    REJECTED = "rejected"
    # A reviewer asked the author for changes: like a rejection it cannot run, and the
    # author answers with a new version (the review threads say what to change).
    CHANGES_REQUESTED = "changes_requested"
    # It waited for review when a newer version of its plan was submitted: it left the
    # queues and can be neither decided nor run (``superseded_by`` names the newer one).
    SUPERSEDED = "superseded"


REVIEW_FIELDS = frozenset({"status", "submitted", "superseded_by"})


class PlanVersion(models.Model):
    """One immutable version of a plan's document."""

    plan = models.ForeignKey(Plan, on_delete=models.CASCADE, related_name="versions")
    number = models.PositiveIntegerField()
    document = models.JSONField()  # forge.plan.to_data of the document
    content_hash = models.CharField(max_length=64)
    source_format = models.CharField(max_length=16, default="json")
    parent = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.PROTECT, related_name="children"
    )
    replan_reason = models.TextField(blank=True)
    note = models.TextField(blank=True)  # the author's change note
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="plan_versions"
    )
    planner = models.CharField(max_length=100, blank=True)  # "editor", "scripted:...", "llm:..."
    created_at = models.DateTimeField(auto_now_add=True)
    diagnostics = models.JSONField(default=list)  # [Diagnostic.to_data(), ...]
    has_errors = models.BooleanField(default=False)
    # forge.compiler.Impact.to_data() of the version as compiled when saved; None for a
    # version with errors, and for versions saved before impacts were kept.
    impact = models.JSONField(null=True, blank=True, default=None)
    # Non-repeatable side effects already performed by runs of its ancestors:
    # [{"tool", "step", "args_hash"}, ...] (forge.compiler.PerformedSideEffect.to_data)
    performed_side_effects = models.JSONField(default=list)
    # Where the author placed the steps on the graph: {"positions": {step_id: [x, y]}}, or
    # {} for the automatic layout. Presentation only: not part of the document, so not of
    # the content hash, the approvals or anything that runs (plans.layout).
    layout = models.JSONField(default=dict, blank=True)
    submitted = models.BooleanField(default=True)  # False: a draft, not yet asking for review
    status = models.CharField(
        max_length=20, choices=VersionStatus.choices, default=VersionStatus.AWAITING_APPROVAL
    )
    # The version whose submission superseded this one (status ``superseded``), else None.
    superseded_by = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.PROTECT, related_name="supersedes"
    )

    class Meta:
        ordering = ["plan_id", "number"]
        constraints = [
            models.UniqueConstraint(fields=["plan", "number"], name="one_number_per_plan"),
        ]
        indexes = [models.Index(fields=["status"])]

    def __str__(self) -> str:
        return f"{self.plan.name} v{self.number}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        # Versions are immutable: only the review state may change after creation.
        fields = kwargs.get("update_fields")
        if self.pk is not None and (not fields or not set(fields) <= REVIEW_FIELDS):
            raise RuntimeError("plan versions are immutable; save a new version instead")
        super().save(*args, **kwargs)


class Decision(models.TextChoices):
    APPROVED = "approved"
    REJECTED = "rejected"
    CHANGES_REQUESTED = "changes_requested"


class Approval(models.Model):
    """A reviewer's decision on one version, never by its author.

    An approval also records the content hash the reviewer approved and the gate's
    signature over it (``plans.gate``): the version runs only while its document still
    has that hash, and a row written around the application does not verify. The one
    approval without a reviewer is the deployment policy's, of a read-only replan
    (``by_policy``)."""

    version = models.ForeignKey(PlanVersion, on_delete=models.CASCADE, related_name="approvals")
    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.PROTECT,
        related_name="plan_approvals",
        null=True,
        blank=True,
    )
    by_policy = models.BooleanField(default=False)
    decision = models.CharField(max_length=20, choices=Decision.choices)
    comment = models.TextField(blank=True)
    content_hash = models.CharField(max_length=64, blank=True)  # what was approved
    signature = models.CharField(max_length=64, blank=True)  # plans.gate, for approvals
    # The reviewer's teams when they decided (approval rules count them; signed with an
    # approval, shown in the audit trail).
    teams = models.JSONField(default=list, blank=True)
    # The rules version the decision was judged under (plans.RulesVersion.number); 0 for
    # the FORGE_APPROVAL_RULES file or four eyes alone.
    rules_version = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "id"]

    @property
    def reviewer_name(self) -> str:
        return "policy" if self.by_policy or self.reviewer is None else self.reviewer.username


class ProposalKind(models.TextChoices):
    GENERATE = "generate"  # a first version, from a person's goal
    REPLAN = "replan"  # the next version of a run that needs a replan (replan: auto)


class ProposalStatus(models.TextChoices):
    WORKING = "working"  # asked: a worker is (or will be) asking the planner
    CANCELLED = "cancelled"  # its person stopped it: no version, whatever came after
    PROPOSED = "proposed"  # a version that compiles
    DOES_NOT_COMPILE = "does_not_compile"  # the last attempt, saved with its errors
    FAILED = "failed"  # no version: the planner gave no usable answer


class PlannerProposal(models.Model):
    """What a planner was asked for on a person's behalf and what it answered: the
    transcript a person reads to debug an agent's plan or replan.

    ``requested_by`` is the person the planner worked for (who asked for the plan, or who
    started the run it replans); the version it made is authored by that person, so the
    four-eyes rule keeps them from approving it. ``attempts`` holds each answer with what
    the planner was told (summarised), its problems, tokens, cost and model
    (``forge.planners.proposals.Attempt.to_data``). A proposal that failed is kept too,
    with the request, so nothing a person typed or a planner said is lost.

    "New plan from a goal" records the proposal ``working`` before a worker asks the
    planner (``plans.generation``): ``attempt`` is the attempt being asked (0 before a
    worker took it), of at most ``max_attempts``, and ``attempts`` grows as answers come
    back, so the page shows the work in progress."""

    kind = models.CharField(max_length=10, choices=ProposalKind.choices)
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="planner_proposals"
    )
    plan = models.ForeignKey(
        Plan, null=True, blank=True, on_delete=models.CASCADE, related_name="proposals"
    )
    version = models.ForeignKey(
        PlanVersion, null=True, blank=True, on_delete=models.CASCADE, related_name="proposals"
    )
    run_id = models.BigIntegerField(null=True, blank=True, db_index=True)  # runs: a floor above
    goal = models.TextField()
    context = models.TextField(blank=True)
    constraints = models.TextField(blank=True)
    name = models.CharField(max_length=200, blank=True)  # the new plan's name, if given
    planner = models.CharField(max_length=200)
    model = models.CharField(max_length=200, blank=True)
    status = models.CharField(max_length=20, choices=ProposalStatus.choices)
    error_code = models.CharField(max_length=64, blank=True)
    error = models.TextField(blank=True)
    rationale = models.TextField(blank=True)
    tokens = models.PositiveIntegerField(default=0)
    cost = models.FloatField(default=0.0)
    attempts = models.JSONField(default=list)
    attempt = models.PositiveSmallIntegerField(default=0)
    max_attempts = models.PositiveSmallIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.kind} by {self.planner} for {self.requested_by_id}"


class RulesStatus(models.TextChoices):
    PROPOSED = "proposed"  # saved by an admin, waiting for a second admin
    IN_FORCE = "in_force"  # the rules every judgement uses
    SUPERSEDED = "superseded"  # was in force, or waited, until a later version


class RulesVersion(models.Model):
    """One version of the approval rules (SPEC section 10), as an admin wrote it on the
    Rules page or the API. It is in force only once a second admin approved it
    (``plans.rules_changes``); the one in force is the newest ``in_force`` version, else
    the ``FORGE_APPROVAL_RULES`` file."""

    number = models.PositiveIntegerField(unique=True)
    text = models.TextField()  # as written (JSON or YAML): what the diff shows
    data = models.JSONField()  # RuleSet.to_data(): what is judged
    status = models.CharField(
        max_length=12, choices=RulesStatus.choices, default=RulesStatus.PROPOSED
    )
    proposed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="rules_proposed"
    )
    approved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.PROTECT,
        related_name="rules_approved",
        null=True,
        blank=True,
    )
    comment = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    approved_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-number"]
