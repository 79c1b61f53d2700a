"""Plan documents in and out of text: JSON, YAML and Mermaid in; those and DOT out.

``load_plan`` checks the size limit on the raw bytes first, then parses with the format's
safe reader and builds the document through the strict codec, so every format obeys the
same import limits and refuses with the same ``PlanDocumentError`` codes.
"""

from __future__ import annotations

from collections.abc import Callable

from forge.errors import PlanDocumentError
from forge.plan.document import PlanDocument
from forge.plan.formats.detect import detect_format
from forge.plan.formats.dot_write import dump_dot
from forge.plan.formats.json_io import dump_json, load_json
from forge.plan.formats.mermaid_read import DEFAULT_GOAL, load_mermaid
from forge.plan.formats.mermaid_write import dump_mermaid
from forge.plan.formats.source import source_text
from forge.plan.formats.yaml_io import dump_yaml, load_yaml
from forge.plan.limits import DEFAULT_LIMITS, ImportLimits

__all__ = [
    "DEFAULT_GOAL",
    "EXPORT_FORMATS",
    "IMPORT_FORMATS",
    "detect_format",
    "dump_plan",
    "load_plan",
]

_READERS: dict[str, Callable[[str, ImportLimits], PlanDocument]] = {
    "json": load_json,
    "yaml": load_yaml,
    "mermaid": load_mermaid,
}
_WRITERS: dict[str, Callable[[PlanDocument], str]] = {
    "json": dump_json,
    "yaml": dump_yaml,
    "mermaid": dump_mermaid,
    "dot": dump_dot,
}
IMPORT_FORMATS = tuple(_READERS)
EXPORT_FORMATS = tuple(_WRITERS)


def load_plan(
    source: str | bytes, format: str, limits: ImportLimits = DEFAULT_LIMITS
) -> PlanDocument:
    """Read a plan written in ``format`` (``"json"``, ``"yaml"`` or ``"mermaid"``).

    Raises ``PlanDocumentError``; its ``code`` says why: ``unsupported_format``,
    ``document_too_large``, ``invalid_encoding``, ``invalid_json``, ``invalid_yaml``,
    ``invalid_mermaid``, ``duplicate_key``, ``yaml_tag``, ``yaml_aliases``,
    ``document_too_deep``, ``too_many_steps``, ``too_many_nodes``, ``invalid_id``, or a
    codec code.
    """
    reader = _READERS.get(format)
    if reader is None:
        raise _unsupported(format, IMPORT_FORMATS, "imported")
    return reader(source_text(source, limits), limits)


def dump_plan(document: PlanDocument, format: str) -> str:
    """``document`` as ``"json"``, ``"yaml"``, ``"mermaid"`` or ``"dot"`` text.

    Every format but DOT reads back with ``load_plan`` to an equal document.
    """
    writer = _WRITERS.get(format)
    if writer is None:
        raise _unsupported(format, EXPORT_FORMATS, "exported")
    return writer(document)


def _unsupported(format: str, known: tuple[str, ...], verb: str) -> PlanDocumentError:
    return PlanDocumentError(
        f"format {format!r} cannot be {verb}; use one of {', '.join(known)}",
        code="unsupported_format",
    )
