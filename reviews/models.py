"""Review threads on plan versions, as on a pull request: a reviewer (or the author)
comments on one step or on the whole version, others reply, and a thread is resolved (and
may be reopened).

A thread belongs to the version it was opened on. It is shown on that version and on
every later version descended from it (``parent`` links), where it is *outdated* once its
step changed or was removed (``reviews.threads``): comments carry over where the step is
unchanged, as a pull request's comments stay on lines nobody touched.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from plans.models import PlanVersion

# The longest comment kept (the API refuses longer ones with 422).
MAX_COMMENT = 10_000
# A step id as the plan format allows it (forge.plan.limits), with room to spare.
MAX_STEP_ID = 200


class Thread(models.Model):
    version = models.ForeignKey(
        PlanVersion, on_delete=models.CASCADE, related_name="review_threads"
    )
    step_id = models.CharField(max_length=MAX_STEP_ID, blank=True)  # "": the whole version
    opened_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="review_threads"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    resolved = models.BooleanField(default=False)
    resolved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
    )
    resolved_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["created_at", "id"]
        indexes = [models.Index(fields=["version", "step_id"])]

    def __str__(self) -> str:
        return f"thread {self.pk} on {self.step_id or 'the version'}"


class Comment(models.Model):
    thread = models.ForeignKey(Thread, on_delete=models.CASCADE, related_name="comments")
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="review_comments"
    )
    body = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "id"]
