"""Data between steps: how a tool step's argument names an earlier step's output.

An argument value may be one of three operators, each an object with one reserved key:

- ``{"$from": STEP, "path": PATH}``: the output of step ``STEP`` (an ancestor of the
  step), or the value at ``PATH`` in it. ``PATH`` is dot-separated (``"matches.0.text"``;
  a segment of digits indexes a list) or, for keys that hold dots, a list of segments;
  without it the whole output is the value.
- ``{"$join": [PART, ...]}``: text made of strings, numbers and ``$from`` references,
  each reference's value a string, number or boolean (a number or boolean as its JSON).
- ``{"$literal": VALUE}``: ``VALUE`` exactly as written, operators inside it not read:
  how an argument that is itself an object with a ``"$from"`` key is written.

Anything else that holds a reserved key (another key beside it, a ``$from`` that is not
a step id, a ``$join`` part that is an object) is a problem the compiler reports
(``invalid_reference``); other keys that start with ``$`` are ordinary keys. The
arguments object itself cannot be an operator: a reference fills one argument. This
module is the syntax and the substitution, pure functions over plain data; the compiler
checks references against the plan (``forge.compiler.references``) and the runtime
resolves them from outputs (``forge.runtime.calls``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from forge.errors import ForgeError

__all__ = [
    "FROM",
    "JOIN",
    "LITERAL",
    "Location",
    "Reference",
    "ReferenceProblem",
    "ReferenceValueError",
    "Template",
    "location_text",
    "lookup",
    "scan",
    "substitute",
]

FROM, JOIN, LITERAL = "$from", "$join", "$literal"
_RESERVED = (FROM, JOIN, LITERAL)
_PATH = "path"

Location = tuple[str | int, ...]


@dataclass(frozen=True)
class Reference:
    """``step``'s output at ``path`` fills the argument at ``at`` (as part ``part`` of
    the ``$join`` there, when ``part`` is not ``None``)."""

    step: str
    path: tuple[str, ...] = ()
    at: Location = ()
    part: int | None = None

    @property
    def path_text(self) -> str:
        """The path as written in the dotted form (a JSON list when a key holds a dot)."""
        if any("." in segment or not segment for segment in self.path):
            return json.dumps(list(self.path), ensure_ascii=False)
        return ".".join(self.path)

    @property
    def source_text(self) -> str:
        """``read.content``, or ``read`` for the whole output."""
        return f"{self.step}.{self.path_text}" if self.path else self.step

    def to_data(self) -> dict[str, Any]:
        return {
            "step": self.step,
            "path": self.path_text,
            "at": location_text(self.at),
            "part": self.part,
        }


@dataclass(frozen=True)
class ReferenceProblem:
    at: Location
    message: str


@dataclass(frozen=True)
class Template:
    """What ``scan`` found in a step's arguments: its references in document order,
    whether any operator is there (a ``$literal`` alone still has to be unwrapped), and
    the syntax problems."""

    references: tuple[Reference, ...] = ()
    operators: bool = False
    problems: tuple[ReferenceProblem, ...] = ()


class ReferenceValueError(ForgeError, ValueError):
    """A value a reference resolved to that cannot stand where it is (an object in a
    ``$join``), or a path its output lacks (``code`` ``unresolved_reference``)."""

    code = "invalid_args"


def location_text(at: Location) -> str:
    """``content``, ``env.NOTES``, ``argv[2]``: an argument's place, for messages."""
    text = ""
    for item in at:
        text += f"[{item}]" if isinstance(item, int) else (f".{item}" if text else item)
    return text or "the arguments"


def scan(args: Mapping[str, Any]) -> Template:
    """The references and syntax problems in ``args`` (a step's arguments as written)."""
    found: list[Reference] = []
    problems: list[ReferenceProblem] = []
    operators = False
    if _operator(args) is not None:
        problems.append(
            ReferenceProblem(
                (), "the arguments cannot themselves be an operator: put it in one argument"
            )
        )
        return Template((), True, tuple(problems))
    stack: list[tuple[Location, Any]] = [((key,), value) for key, value in args.items()]
    stack.reverse()
    while stack:
        at, value = stack.pop()
        if isinstance(value, Mapping):
            kind = _operator(value)
            if kind is None:
                stack.extend(reversed([((*at, key), item) for key, item in value.items()]))
                continue
            operators = True
            if kind == FROM:
                _read_from(value, at, None, found, problems)
            elif kind == JOIN:
                _read_join(value, at, found, problems)
            elif len(value) != 1:
                problems.append(_extra(at, LITERAL, value))
        elif isinstance(value, list):
            stack.extend(reversed([((*at, index), item) for index, item in enumerate(value)]))
    return Template(tuple(found), operators, tuple(problems))


def _operator(value: Mapping[str, Any]) -> str | None:
    kinds = [key for key in _RESERVED if key in value]
    return kinds[0] if kinds else None


def _extra(at: Location, kind: str, value: Mapping[str, Any]) -> ReferenceProblem:
    allowed = {FROM: (FROM, _PATH)}.get(kind, (kind,))
    extra = sorted(key for key in value if key not in allowed)
    return ReferenceProblem(
        at,
        f"{location_text(at)}: a {kind} object has no other key "
        f"({', '.join(map(repr, extra))}); to pass such an object as it is, wrap it in "
        f'{{"{LITERAL}": ...}}',
    )


def _read_from(
    value: Mapping[str, Any],
    at: Location,
    part: int | None,
    found: list[Reference],
    problems: list[ReferenceProblem],
) -> None:
    where = location_text(at) + ("" if part is None else f" (part {part} of its {JOIN})")
    if set(value) - {FROM, _PATH}:
        problems.append(_extra(at, FROM, value))
        return
    step = value[FROM]
    if not isinstance(step, str) or not step:
        problems.append(ReferenceProblem(at, f"{where}: {FROM} must name a step, not {step!r}"))
        return
    path = _path(value.get(_PATH, ""))
    if isinstance(path, str):
        problems.append(ReferenceProblem(at, f"{where}: {path}"))
        return
    found.append(Reference(step, path, at, part))


def _path(raw: Any) -> tuple[str, ...] | str:
    """The segments of a path, or why it is not one."""
    if isinstance(raw, str):
        if not raw:
            return ()
        segments = raw.split(".")
        if not all(segments):
            return f"path {raw!r} has an empty segment"
        return tuple(segments)
    if isinstance(raw, list):
        segments = []
        for item in raw:
            if isinstance(item, bool) or not isinstance(item, str | int):
                return f"a path's segments are strings or list indexes, not {item!r}"
            if isinstance(item, int) and item < 0:
                return f"a list index in a path is 0 or more, not {item}"
            segments.append(str(item))
        return tuple(segments)
    return f"path must be a string such as 'content' or a list of segments, not {raw!r}"


def _read_join(
    value: Mapping[str, Any],
    at: Location,
    found: list[Reference],
    problems: list[ReferenceProblem],
) -> None:
    if len(value) != 1:
        problems.append(_extra(at, JOIN, value))
        return
    parts = value[JOIN]
    where = location_text(at)
    if not isinstance(parts, list):
        problems.append(ReferenceProblem(at, f"{where}: {JOIN} takes a list of parts"))
        return
    for index, part in enumerate(parts):
        if isinstance(part, str) or (isinstance(part, int | float) and not isinstance(part, bool)):
            continue
        if isinstance(part, Mapping) and _operator(part) == FROM:
            _read_from(part, at, index, found, problems)
            continue
        problems.append(
            ReferenceProblem(
                at,
                f"{where}: part {index} of its {JOIN} must be a string, a number or a "
                f"{FROM} reference, not {_kind(part)}",
            )
        )


def _kind(value: Any) -> str:
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, list):
        return "a list"
    return "null" if value is None else type(value).__name__


def lookup(output: Any, path: tuple[str, ...]) -> Any:
    """The value at ``path`` in ``output``; ``ReferenceValueError`` (code
    ``unresolved_reference``) naming the first segment that is not there."""
    value = output
    for depth, segment in enumerate(path):
        if isinstance(value, Mapping) and segment in value:
            value = value[segment]
        elif isinstance(value, list) and segment.isdigit() and int(segment) < len(value):
            value = value[int(segment)]
        else:
            where = ".".join(path[:depth]) or "the output"
            raise ReferenceValueError(
                f"{where} has no {segment!r} (it is {_kind(value)}"
                + (f" of {len(value)} item(s))" if isinstance(value, list | Mapping) else ")"),
                code="unresolved_reference",
            )
    return value


def substitute(args: Mapping[str, Any], value_of: Callable[[Reference], Any]) -> dict[str, Any]:
    """``args`` with every operator replaced: a reference by ``value_of(reference)``, a
    join by its text, a literal by its value. ``args`` must have scanned without
    problems. Raises what ``value_of`` raises, and ``ReferenceValueError`` for a join
    part whose value is not text, a number or a boolean."""

    def walk(value: Any, at: Location) -> Any:
        if isinstance(value, Mapping):
            kind = _operator(value)
            if kind == FROM:
                return value_of(_reference(value, at, None))
            if kind == JOIN:
                return "".join(_text(part, at, index) for index, part in enumerate(value[JOIN]))
            if kind == LITERAL:
                return value[LITERAL]
            return {key: walk(item, (*at, key)) for key, item in value.items()}
        if isinstance(value, list):
            return [walk(item, (*at, index)) for index, item in enumerate(value)]
        return value

    def _text(part: Any, at: Location, index: int) -> str:
        if isinstance(part, Mapping):
            reference = _reference(part, at, index)
            resolved = value_of(reference)
            if isinstance(resolved, str):
                return resolved
            if resolved is not None and not isinstance(resolved, Mapping | list):
                return json.dumps(resolved)
            raise ReferenceValueError(
                f"{location_text(at)}: part {index} of its {JOIN} refers to "
                f"{reference.source_text}, which is {_kind(resolved)}, not text or a number"
            )
        return part if isinstance(part, str) else json.dumps(part)

    return {key: walk(value, (key,)) for key, value in args.items()}


def _reference(value: Mapping[str, Any], at: Location, part: int | None) -> Reference:
    path = _path(value.get(_PATH, ""))
    assert not isinstance(path, str), "substitute() takes arguments that scanned cleanly"
    return Reference(value[FROM], path, at, part)
