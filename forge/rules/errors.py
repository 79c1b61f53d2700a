"""The one error of approval rules: what is wrong, in which field, on which line."""

from __future__ import annotations

from forge.errors import ForgeError

__all__ = ["RulesInvalid"]


class RulesInvalid(ForgeError, ValueError):
    """A rules document refused. ``code``: ``rules_syntax`` (not JSON or YAML),
    ``rules_unknown_key``, ``rules_bad_value`` (a wrong type, N below 1, an unknown
    side-effect class, a repeated id), ``rules_never_match`` (a glob no name can match)
    or ``rules_unknown_team``; ``field`` is the path (``rules[0].require.team``) and
    ``line`` its line in the text (0 when not known)."""

    code = "rules_invalid"

    def __init__(self, message: str, *, code: str, field: str = "", line: int = 0) -> None:
        where = ", ".join(
            part for part in (f"line {line}" if line else "", field and f"field {field}") if part
        )
        super().__init__(f"{where}: {message}" if where else message, code=code)
        self.field = field
        self.line = line

    @property
    def details(self) -> dict[str, object]:
        """What an API answer adds to the code and message: the line and the field."""
        return {"line": self.line, "field": self.field}
