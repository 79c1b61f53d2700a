"""JSON text as Forge writes it: the spellings hashes and outputs depend on, written fast.

``canonical_json`` (sorted keys, no spaces, UTF-8 kept as is), ``compact_json`` (keys
as given, no spaces) and ``indented_json`` (``json.dumps(data, indent=2,
ensure_ascii=False)``) are the spellings; all are the standard library's, so every hash
and output stays what it was.

msgspec writes JSON several times faster than the standard library, and the same text
for strings, integers, ``true``, ``false`` and ``null``, but not for every float: for
``1e16`` and ``1e-05`` it writes ``1e16`` and ``0.00001``, where ``json`` writes
``1e+16`` and ``1e-05`` (and ``NaN`` and the infinities it writes as ``null``).
``json_number`` hands msgspec such a float as ``json``'s text, raw; the writers that
build their data for msgspec (``encode_plain``, ``indented_plain``) pass every float
they put in it through ``json_number``, and tests compare their text with the standard
library's. ``canonical_json`` is ``json``'s own C encoder, made once.
"""

from __future__ import annotations

import json
import json.encoder
import math
from collections.abc import Callable
from typing import Any, cast

import msgspec

__all__ = [
    "canonical_json",
    "compact_json",
    "encode_plain",
    "indented_json",
    "indented_plain",
    "json_number",
]

# One encoder for every call: ``json.dumps`` with options builds a new one each time,
# which was a good part of hashing each step's arguments and fingerprint.
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)
_SPACED = json.JSONEncoder(ensure_ascii=False)  # json.dumps's own ", " and ": "
_COMPACT = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)
_PLAIN = msgspec.json.Encoder()
_LOWEST, _HIGHEST = 1e-4, 1e16  # json and msgspec spell the floats between alike


def _c_encoder(make: Callable[..., Any] | None) -> Callable[[Any, int], list[str]] | None:
    """``_CANONICAL``'s own C encoder, made once by ``make`` (``json.encoder``'s private
    ``c_make_encoder``; ``JSONEncoder.encode`` makes one per call,
    in Python, which cost more than encoding a step's few arguments), or ``None``: where C
    is missing, or where ``c_make_encoder``, a private function, no longer takes these
    arguments or writes another text. Then the public encoder does the work, as fast as
    the standard library makes it.

    The C encoder keeps no record of the containers it is inside (a record it would have
    to empty after an error), so data that contains itself ends in a RecursionError
    rather than ``json``'s ValueError: ``canonical_json`` then asks ``_CANONICAL``."""
    if make is None:
        return None
    try:
        encoder = make(
            None, _CANONICAL.default, json.encoder.encode_basestring, None, ":", ",", True,
            False, True,
        )  # fmt: skip
        probe = {"b": [1, 2.5, None, True], "a": "é\n"}
        if "".join(encoder(probe, 0)) != _CANONICAL.encode(probe):
            return None
    except Exception:  # another signature, another behaviour: not ours to guess
        return None
    return cast(Callable[[Any, int], list[str]], encoder)


_CANONICAL_C = _c_encoder(getattr(json.encoder, "c_make_encoder", None))


def canonical_json(data: Any) -> str:
    """One spelling of ``data``: sorted keys, no spaces, UTF-8 kept as is."""
    if _CANONICAL_C is None:
        return _CANONICAL.encode(data)
    try:
        return "".join(_CANONICAL_C(data, 0))
    except RecursionError:
        return _CANONICAL.encode(data)


def compact_json(data: Any) -> str:
    """``data`` on one line, keys as given, no spaces: what ``encode_plain`` writes."""
    return _COMPACT.encode(data)


def indented_json(data: Any) -> str:
    """``json.dumps(data, indent=2, ensure_ascii=False)``, the same text: written by the
    C encoder and indented by msgspec, where ``json.dumps`` with an indent falls back to
    its Python encoder (a 10,000-step compile result took longer to write than to make).
    What only Python writes (``NaN``, ``Infinity``) msgspec cannot read: that goes the
    slow way."""
    text = _SPACED.encode(data)
    try:
        return msgspec.json.format(text, indent=2)
    except msgspec.DecodeError:
        return json.dumps(data, indent=2, ensure_ascii=False)


def json_number(value: Any) -> Any:
    """``value``, or for a float msgspec would spell unlike ``json`` (outside
    ``[1e-4, 1e16)``, not finite) ``json``'s spelling of it, raw."""
    if type(value) is not float or _LOWEST <= abs(value) < _HIGHEST or value == 0:
        return value
    if math.isfinite(value):
        return msgspec.Raw(float.__repr__(value))
    return msgspec.Raw("NaN" if value != value else "Infinity" if value > 0 else "-Infinity")


# ``canonical_json(data).encode()`` (with keys in order already: msgspec keeps them as
# given), for data of lists, tuples, dicts with string keys, strings, integers, booleans,
# ``None`` and floats passed through ``json_number``. The encoder's own method: a
# function around it cost a call per fingerprint.
encode_plain: Callable[[Any], bytes] = _PLAIN.encode


def indented_plain(data: Any) -> bytes:
    """``indented_json(data)`` as UTF-8, for data as ``encode_plain`` takes it (keys in
    any order). Bytes: a large result is written out as they are (decoding 5 MB and
    encoding it again for stdout took as long as writing it)."""
    return msgspec.json.format(_PLAIN.encode(data), indent=2)
