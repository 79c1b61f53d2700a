"""Raw plan source to text, with the size limit checked on the bytes before any parsing.

Checking the size first means no parser ever sees a document over ``max_bytes``, so every
later cost (scanning, composing, walking) is bounded by it.
"""

from __future__ import annotations

from forge.errors import PlanDocumentError
from forge.plan.limits import ImportLimits

__all__ = ["EMPTY", "plan_text", "source_text"]

EMPTY = "the document is empty: a plan needs a goal and its steps"


def source_text(source: str | bytes, limits: ImportLimits) -> str:
    """The text of ``source`` (UTF-8 when bytes, a leading BOM dropped).

    Raises ``PlanDocumentError`` with code ``document_too_large`` over ``limits.max_bytes``
    and ``invalid_encoding`` for bytes that are not UTF-8.
    """
    if isinstance(source, str):
        # The limit is on bytes, as a file or request body would have them; a text's
        # length in characters would let multi-byte text through at up to four times it.
        limits.check_size(len(source.encode("utf-8", "surrogatepass")))
        text = source
    else:
        limits.check_size(len(source))
        try:
            text = bytes(source).decode("utf-8")
        except UnicodeDecodeError as error:
            raise PlanDocumentError(
                f"document is not valid UTF-8 (byte {error.start}: {error.reason})",
                code="invalid_encoding",
            ) from None
    return text.removeprefix("\ufeff")


def plan_text(source: str | bytes, limits: ImportLimits) -> str:
    """``source_text`` of a plan, which has something in it: a blank source (nothing, or
    only spaces and line breaks) raises ``invalid_document`` saying it is empty, rather
    than each format's parser saying what it expected first."""
    text = source_text(source, limits)
    if not text or text.isspace():
        raise PlanDocumentError(EMPTY, code="invalid_document")
    return text
