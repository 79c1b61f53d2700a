"""Plan documents as the web receives them: a JSON object, or source text in a format.

Both go through the core's strict codec under the import limits of the settings
(``FORGE_MAX_PLAN_BYTES``, ``FORGE_MAX_PLAN_STEPS``); an object is measured as its
canonical JSON, so the size limit means the same for both. Every refusal is a
``PlanDocumentError`` whose ``code`` names the reason (``document_too_large``,
``too_many_steps``, ``invalid_json``, ...). Text the databases cannot store (a NUL
character, a lone surrogate) and numbers JSON cannot spell (NaN, infinities) are
refused here too, as ``invalid_document``, before they reach a ``JSONField``.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.conf import settings

from forge.errors import PlanDocumentError
from forge.plan import (
    ImportedPlan,
    ImportLimits,
    ImportWarning,
    PlanDocument,
    detect_format,
    from_data,
    import_plan,
    to_data,
)

__all__ = ["Received", "import_limits", "read_document", "storable_text"]

# "\\u0000" preceded by an even number of backslashes: JSON's spelling of a NUL character,
# not the text "\\u0000" (whose backslash JSON doubles).
_ESCAPED_NUL = re.compile(r"(?<!\\)(?:\\\\)*\\u0000")


def import_limits() -> ImportLimits:
    """The settings' limits, named in each refusal: the node limit is the step limit's
    (50 nodes a step), as the CLI's is ``--max-steps``'s."""
    return ImportLimits(
        max_bytes=settings.FORGE_MAX_PLAN_BYTES,
        max_steps=settings.FORGE_MAX_PLAN_STEPS,
        bytes_setting="FORGE_MAX_PLAN_BYTES",
        steps_setting="FORGE_MAX_PLAN_STEPS",
    )


@dataclass(frozen=True)
class Received:
    """A document as the API received it: the format it came in, and what reading its
    source text warned of (``forge.plan.ImportWarning``: a Mermaid decision whose
    branches all run), which the compile answer and the version's diagnostics carry."""

    document: PlanDocument
    format: str
    warnings: tuple[ImportWarning, ...] = ()


def read_document(
    *, document: Any = None, source: str | None = None, format: str | None = None
) -> Received:
    """``document`` (plain data, "json"), or ``source`` text in ``format`` (detected
    when not given)."""
    limits = import_limits()
    if document is not None:
        # from_data checks depth and step count first; the body's size is already bounded
        # by Django's DATA_UPLOAD_MAX_MEMORY_SIZE, so parsing before measuring is cheap.
        imported, fmt = ImportedPlan(from_data(document, limits)), "json"
    elif source is not None:
        fmt = format or detect_format(source)
        imported = import_plan(source, fmt, limits)  # measures the source's bytes first
    else:
        raise PlanDocumentError("give a document, or a source and its format")
    # YAML can spell NaN and NUL, JSON lone surrogates: check what would be stored.
    stored = _storable_json(to_data(imported.document))
    if document is not None:
        limits.check_size(len(stored))
    return Received(imported.document, fmt, imported.warnings)


def storable_text(value: str) -> bool:
    """Whether every database Forge supports can store ``value`` as text."""
    if "\x00" in value:
        return False
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _storable_json(data: Any) -> bytes:
    """``data`` as canonical JSON bytes, refusing what a database could not store.

    One C-speed ``json.dumps`` finds every problem (a lone surrogate cannot be encoded,
    NaN is refused, NUL shows as an unescaped ``\\u0000``); only then does a walk
    look for the place to name."""
    try:
        text = json.dumps(
            data, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
        )
        encoded = text.encode("utf-8")
    except ValueError:  # NaN or infinity; UnicodeEncodeError is a ValueError too
        _check_storable(data, "")
        raise _unstorable("", "cannot be stored as JSON") from None
    if _ESCAPED_NUL.search(text):
        _check_storable(data, "")
    return encoded


def _check_storable(data: Any, path: str) -> None:
    stack: list[tuple[Any, str]] = [(data, path)]
    while stack:
        value, where = stack.pop()
        if isinstance(value, str):
            if not storable_text(value):
                raise _unstorable(where, "contains a NUL character or a lone surrogate")
        elif isinstance(value, float):
            if not math.isfinite(value):
                raise _unstorable(where, f"{value!r} is not a JSON number")
        elif isinstance(value, Mapping):
            for key, item in value.items():
                if isinstance(key, str) and not storable_text(key):
                    raise _unstorable(where, "a key contains a NUL character or a lone surrogate")
                stack.append((item, f"{where}.{key}" if where else str(key)))
        elif isinstance(value, list | tuple):
            stack.extend((item, f"{where}[{index}]") for index, item in enumerate(value))


def _unstorable(path: str, reason: str) -> PlanDocumentError:
    return PlanDocumentError(f"{path or 'document'}: {reason}", code="invalid_document", path=path)
