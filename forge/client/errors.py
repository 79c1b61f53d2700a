"""``ForgeApiError``: every way a call to Forge's API can fail, with the API's own code.

An answer of 400 or more carries the API's ``{"detail", "code"}`` (plus ``diagnostics``,
``path`` or ``errors`` for some), which the error keeps whole. When no usable answer came,
the code says why: ``unreachable`` (no connection), ``timeout`` (no answer in time), or
``unexpected_response`` (an answer that is not Forge's: a proxy's HTML page, a redirect,
a body that is not the JSON the operation promises).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from forge.errors import ForgeError

__all__ = ["ForgeApiError"]

# The extras of an API error worth passing on, in the order they are shown.
_EXTRAS = ("diagnostics", "path", "errors", "superseded_by", "held_call")


class ForgeApiError(ForgeError, RuntimeError):
    """A call the API refused (``status`` >= 400) or that got no usable answer (``status``
    is then 0, or the status of the answer that could not be read)."""

    code = "api_error"

    def __init__(
        self, message: str, *, code: str, status: int = 0, body: Mapping[str, Any] | None = None
    ) -> None:
        super().__init__(message, code=code)
        self.status = status
        self.body: Mapping[str, Any] = dict(body or {})

    @property
    def diagnostics(self) -> list[Any]:
        """The compiler's diagnostics that came with the refusal (``has_errors``), if any."""
        found = self.body.get("diagnostics")
        return list(found) if isinstance(found, list) else []

    def to_data(self) -> dict[str, Any]:
        """``{"status", "code", "detail"}`` and any of the API's extras, as JSON data."""
        data: dict[str, Any] = {"status": self.status, "code": self.code, "detail": self.message}
        data.update({name: self.body[name] for name in _EXTRAS if name in self.body})
        return data
