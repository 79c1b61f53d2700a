"""The JSON format: strict stdlib parsing in, indented UTF-8 out.

Parsing refuses what ``json.loads`` would otherwise let through silently: a repeated key
(the last one would win and the first value be lost) and the non-standard constants
``NaN`` and ``Infinity``. Absurd nesting is turned from ``RecursionError`` into the depth
limit's error. Objects are counted as the parser makes them (each with its keys), so a
document of a million tiny objects stops at the node limit instead of building them
all; arrays and scalars cost the C scanner little and are counted by ``from_data``.
"""

from __future__ import annotations

import json
from typing import Any, NoReturn

import msgspec

from forge.errors import PlanDocumentError
from forge.plan.codec import from_data, indented_json, to_data
from forge.plan.document import PlanDocument
from forge.plan.formats.source import plan_text
from forge.plan.limits import ImportLimits, too_deep
from forge.plan.typed import read_json

__all__ = ["dump_json", "load_json", "load_json_bytes", "parse_json"]

_BOM = "\ufeff".encode()


def parse_json(text: str | bytes, limits: ImportLimits, *, document_at: str = "") -> object:
    """Plain data from JSON ``text`` (bytes in UTF-8, -16 or -32, as ``json.loads``
    reads them); raises ``PlanDocumentError`` (``invalid_json``,
    ``duplicate_key``, ``document_too_deep``, ``too_many_nodes``, ``too_many_steps``).

    ``text`` is a plan document, or with ``document_at`` an object holding one under that
    key (a request's body): past the node limit, a plan of more steps than allowed is
    refused for its steps (``ImportLimits``)."""
    try:
        return _parse_json(text, limits)
    except PlanDocumentError as error:
        if error.code != "too_many_nodes":
            raise
        refused = error
    steps = _step_count(text, document_at)
    if steps is not None:
        limits.check_step_count(steps)
    raise refused


def _parse_json(text: str | bytes, limits: ImportLimits) -> object:
    try:
        return json.loads(
            text, object_pairs_hook=_CountedObjects(limits), parse_constant=_no_constant
        )
    except PlanDocumentError:
        raise
    except json.JSONDecodeError as error:
        raise PlanDocumentError(
            f"invalid JSON at line {error.lineno}, column {error.colno}: {error.msg}",
            code="invalid_json",
            path=f"line {error.lineno}",
        ) from None
    except RecursionError:
        # The C scanner recurses once per nesting level, so only documents far deeper
        # than any limit get here; they are over the depth limit by construction.
        raise too_deep(limits.max_depth) from None
    except ValueError as error:  # e.g. an integer longer than Python's digit limit
        raise PlanDocumentError(f"invalid JSON: {error}", code="invalid_json") from None


def load_json(text: str, limits: ImportLimits) -> PlanDocument:
    """The plan of ``text``: decoded straight into typed values when that way can vouch
    for it (``forge.plan.typed.read_json``), else parsed here and read from the data,
    which refuses what is wrong with its code."""
    document = read_json(text, limits)
    return from_data(parse_json(text, limits), limits) if document is None else document


def load_json_bytes(source: bytes, limits: ImportLimits) -> PlanDocument:
    """``load_json`` of UTF-8 ``source``: decoded straight from the bytes when the fast
    way can vouch for them (msgspec accepts only valid UTF-8), else made text, with the
    checks and errors of ``plan_text``, and read as ``load_json`` reads it."""
    limits.check_size(len(source))
    document = read_json(source.removeprefix(_BOM), limits)
    if document is None:
        document = from_data(parse_json(plan_text(source, limits), limits), limits)
    return document


def dump_json(document: PlanDocument) -> str:
    return indented_json(to_data(document)) + "\n"


class _CountedObjects:
    """The ``object_pairs_hook``: each object with unique keys, counted against the node
    limit as the object and its keys (a lower bound of the nodes it holds, so nothing the
    exact count in ``from_data`` accepts is refused here)."""

    def __init__(self, limits: ImportLimits) -> None:
        self.limits = limits
        self.budget = limits.node_limit

    def __call__(self, pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        self.budget -= 1 + len(pairs)
        if self.budget < 0:
            raise self.limits.too_many_nodes()
        data: dict[str, Any] = {}
        for key, value in pairs:
            if key in data:
                raise PlanDocumentError(
                    f"duplicate key {key!r} in a JSON object: the first value would be lost",
                    code="duplicate_key",
                    path=key,
                )
            data[key] = value
        return data


class _Steps(msgspec.Struct):
    steps: list[msgspec.Raw] = []


_STEPS = msgspec.json.Decoder(_Steps)
_OBJECT = msgspec.json.Decoder(dict[str, msgspec.Raw])


def _step_count(text: str | bytes, document_at: str) -> int | None:
    """How many steps the plan of ``text`` (under the key ``document_at`` of it, when
    given) lists, or ``None`` when that cannot be told: msgspec skips over the rest
    without building it, a pass in C over text whose size is bounded already."""
    try:
        source: str | bytes | msgspec.Raw = text
        if document_at:
            found = _OBJECT.decode(text).get(document_at)
            if found is None:
                return None
            source = found
        return len(_STEPS.decode(source).steps)
    except (msgspec.DecodeError, RecursionError):  # not such an object, or not JSON
        return None


def _no_constant(name: str) -> NoReturn:
    raise PlanDocumentError(
        f"invalid JSON: {name} is not a JSON number", code="invalid_json", path=name
    )
