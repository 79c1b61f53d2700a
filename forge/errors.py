"""The root of Forge's errors. Each subclass also inherits the builtin a caller expects.

Every error carries a stable ``code`` that the web edge maps to JSON and the CLI prints.
"""

from __future__ import annotations


class ForgeError(Exception):
    """Base of every error Forge raises on purpose."""

    code = "forge_error"

    def __init__(self, message: str, *, code: str | None = None) -> None:
        super().__init__(message)
        if code is not None:
            self.code = code

    @property
    def message(self) -> str:
        return str(self.args[0]) if self.args else ""


class WorkflowError(ForgeError, ValueError):
    """A task graph or plan that breaks a structural rule (missing task, cycle, ...)."""

    code = "invalid_workflow"

    def __init__(
        self, message: str, *, code: str | None = None, node_ids: tuple[str, ...] = ()
    ) -> None:
        super().__init__(message, code=code)
        self.node_ids = node_ids


class BudgetExceeded(ForgeError, RuntimeError):
    """A reservation that would take a budget dimension past its limit."""

    code = "budget_exceeded"

    def __init__(self, message: str, *, dimensions: tuple[str, ...]) -> None:
        super().__init__(message)
        self.dimensions = dimensions


class PlanDocumentError(ForgeError, ValueError):
    """A plan document that cannot be read: bad syntax, bad shape, or over an import limit."""

    code = "invalid_document"

    def __init__(self, message: str, *, code: str | None = None, path: str = "") -> None:
        super().__init__(message, code=code)
        self.path = path
