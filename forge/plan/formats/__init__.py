"""Plan documents in and out of text: JSON, YAML and Mermaid in; those and DOT out.

``load_plan`` checks the size limit on the raw bytes first, then parses with the format's
safe reader and builds the document through the strict codec, so every format obeys the
same import limits and refuses with the same ``PlanDocumentError`` codes. ``import_plan``
also gives what the reading warns of (``ImportWarning``), for the author to see. Each format's
module is imported when that format is first read or written: reading JSON does not pay
for YAML's parser.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module
from typing import TYPE_CHECKING, cast

from forge.errors import PlanDocumentError
from forge.plan.formats.detect import detect_format
from forge.plan.formats.notes import ImportedPlan, ImportWarning
from forge.plan.formats.source import plan_text
from forge.plan.limits import DEFAULT_LIMITS, ImportLimits

if TYPE_CHECKING:
    from forge.plan.document import PlanDocument
    from forge.plan.formats.mermaid_read import DEFAULT_GOAL

__all__ = [
    "DEFAULT_GOAL",
    "EXPORT_FORMATS",
    "IMPORT_FORMATS",
    "ImportWarning",
    "ImportedPlan",
    "detect_format",
    "dump_plan",
    "import_plan",
    "load_plan",
]

# format: (module, function)
_READERS = {
    "json": ("json_io", "load_json"),
    "yaml": ("yaml_io", "load_yaml"),
    "mermaid": ("mermaid_read", "load_mermaid"),
}
_WRITERS = {
    "json": ("json_io", "dump_json"),
    "yaml": ("yaml_io", "dump_yaml"),
    "mermaid": ("mermaid_write", "dump_mermaid"),
    "dot": ("dot_write", "dump_dot"),
}
# Formats whose reading may warn: (module, function) giving an ImportedPlan.
_NOTING_READERS = {"mermaid": ("mermaid_read", "read_mermaid")}
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
    where = _READERS.get(format)
    if where is None:
        raise _unsupported(format, IMPORT_FORMATS, "imported")
    reader = cast(Callable[[str, ImportLimits], "PlanDocument"], _function(*where))
    if format == "json" and isinstance(source, bytes):
        # read from the bytes themselves: a large plan's text is not copied first
        read_bytes = cast(Callable[[bytes, ImportLimits], "PlanDocument"],
                          _function("json_io", "load_json_bytes"))  # fmt: skip
        return read_bytes(source, limits)
    return reader(plan_text(source, limits), limits)


def import_plan(
    source: str | bytes, format: str, limits: ImportLimits = DEFAULT_LIMITS
) -> ImportedPlan:
    """``load_plan``, with what reading the source warns of (``ImportWarning``s: a
    Mermaid decision flattened into a step whose branches all run). Raises as
    ``load_plan`` does."""
    where = _NOTING_READERS.get(format)
    if where is None:
        return ImportedPlan(load_plan(source, format, limits))
    reader = cast(Callable[[str, ImportLimits], ImportedPlan], _function(*where))
    return reader(plan_text(source, limits), limits)


def dump_plan(document: PlanDocument, format: str) -> str:
    """``document`` as ``"json"``, ``"yaml"``, ``"mermaid"`` or ``"dot"`` text.

    Every format but DOT reads back with ``load_plan`` to an equal document.
    """
    where = _WRITERS.get(format)
    if where is None:
        raise _unsupported(format, EXPORT_FORMATS, "exported")
    writer = cast(Callable[["PlanDocument"], str], _function(*where))
    return writer(document)


def _function(module: str, name: str) -> object:
    return getattr(import_module(f"{__name__}.{module}"), name)


def __getattr__(name: str) -> object:
    if name == "DEFAULT_GOAL":  # Mermaid's goal when a diagram names none
        return _function("mermaid_read", name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _unsupported(format: str, known: tuple[str, ...], verb: str) -> PlanDocumentError:
    return PlanDocumentError(
        f"format {format!r} cannot be {verb}; use one of {', '.join(known)}",
        code="unsupported_format",
    )
