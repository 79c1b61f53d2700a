"""Why plans refuses a review or a run: errors with stable codes the API maps to 4xx.

They are ``ForgeError``s so that the API's one error handler answers them as
``{"detail", "code"}`` (plus ``"diagnostics"`` when a plan's own problems are the cause);
``forge_web.api.FORGE_ERROR_STATUS`` gives their statuses: 409 for a conflict with the
version's state, 404 for a version that does not exist.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from forge.errors import ForgeError


class VersionConflict(ForgeError):
    """The version's state forbids the action (409)."""

    code = "conflict"

    def __init__(
        self, message: str, *, code: str | None = None, diagnostics: Sequence[Any] | None = None
    ) -> None:
        super().__init__(message, code=code)
        if diagnostics is not None:
            self.diagnostics = list(diagnostics)


class VersionHasErrors(VersionConflict):
    """A version whose compilation has errors cannot be approved or run."""

    code = "has_errors"


class VersionNotSubmitted(VersionConflict):
    """A draft is not up for review until its author submits it."""

    code = "not_submitted"


class VersionNotApproved(VersionConflict):
    """Only an approved version can be run."""

    code = "not_approved"


class VersionSuperseded(VersionConflict):
    """A newer version of the plan was submitted: this one can be neither decided nor run
    (nor submitted, for a draft older than a version already submitted). The answer names
    the newer version (``superseded_by``, its number)."""

    code = "superseded"

    def __init__(self, message: str, *, newer: int | None) -> None:
        super().__init__(message)
        self.details = {"superseded_by": newer}

    @classmethod
    def of(cls, version: Any, verb: str) -> VersionSuperseded:
        """The refusal to ``verb`` a superseded ``version`` (a ``PlanVersion``)."""
        newer = version.superseded_by.number if version.superseded_by_id else None
        return cls(
            f"version {version.number} was superseded by v{newer} and cannot be {verb}: "
            "a newer version of the plan is the one to review and run",
            newer=newer,
        )


class UnknownVersion(ForgeError, LookupError):
    """A version named in a body or query that the plan does not have (404)."""

    code = "not_found"


class NotYourProposal(ForgeError, PermissionError):
    """A planner's work in progress is its requester's until it made a version (403)."""

    code = "not_your_proposal"


class ProposalFinished(ForgeError):
    """The planner already answered: there is nothing left to cancel (409)."""

    code = "proposal_finished"
