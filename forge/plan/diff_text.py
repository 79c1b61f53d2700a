"""A changed value as the lines a reviewer reads: ``path: before → after``, down to the
part that changed.

Every page that shows a diff (the review card, the diff page, the replans page), the API's
diff (``FieldChange.lines``) and ``forge diff`` read a change through ``field_lines``, and
a whole diff through ``change_lines``, so a reviewer sees the same words wherever they
look. Objects are followed key by key (``args.content``, ``budget.max_cost``); lists item
by item, so an added check reads ``done_when.checks: + …`` and one changed argument
``args.argv[1]: -l → -c``; a long string shows the place where the two differ with some
text around it, never a cut that hides the change.
"""

from __future__ import annotations

import json
import re
from difflib import SequenceMatcher
from typing import Any, Final

__all__ = ["change_lines", "field_lines"]

ARROW: Final = " → "
ABSENT: Final = "—"  # a key one side lacks, or null
SIZE: Final = 70  # characters of a value shown before it is cut
CONTEXT: Final = 24  # characters kept before a long string's first difference
MOST_LINES: Final = 20  # lines for one field; past them one line counts the rest
MOST_ITEMS: Final = 500  # longer lists are shown whole (matching them costs n * m)

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")
_MISSING: Final = object()


def _short(value: Any, size: int = SIZE) -> str:
    """One value in a line: plain words as they are; anything else (a string with line
    breaks or edge spaces, a number, a list) as JSON, so what changed is exact."""
    if _nothing(value):
        return ABSENT
    text = value if _is_plain(value) else _json(value)
    return text if len(text) <= size else f"{text[: size - 1]}…"


def field_lines(field: str, before: Any, after: Any) -> list[str]:
    """The lines that say how ``field`` went from ``before`` to ``after``; none if equal."""
    lines = _lines(field, before, after)
    if len(lines) > MOST_LINES:
        rest = len(lines) - MOST_LINES + 1
        lines = [*lines[: MOST_LINES - 1], f"{field}: {rest} more changes"]
    return lines


def change_lines(diff: dict[str, Any]) -> list[dict[str, Any]]:
    """The diff as lines a reviewer reads top to bottom: plan fields, then steps, then
    dependencies."""
    lines: list[dict[str, Any]] = [
        {
            "kind": "changed",
            "title": f"plan {change['field']}",
            "detail": "",
            "fields": change["lines"],
            "steps": [],
        }
        for change in diff["plan_changes"]
    ]
    lines += [{"kind": "added", "title": step, "detail": "added", "steps": [step]}
              for step in diff["added_steps"]]  # fmt: skip
    lines += [{"kind": "removed", "title": step, "detail": "removed", "steps": [step]}
              for step in diff["removed_steps"]]  # fmt: skip
    for change in diff["changed_steps"]:
        fields = [line for item in change["changes"] for line in item["lines"]]
        lines.append(
            {"kind": "changed", "title": change["id"], "detail": "", "fields": fields,
             "steps": [change["id"]]}
        )  # fmt: skip
    lines += [{"kind": "added", "title": f"{dep}{ARROW}{step}", "detail": "dependency added",
               "steps": [dep, step]} for dep, step in diff["added_edges"]]  # fmt: skip
    lines += [{"kind": "removed", "title": f"{dep}{ARROW}{step}", "detail": "dependency removed",
               "steps": [dep, step]} for dep, step in diff["removed_edges"]]  # fmt: skip
    return lines


def _lines(path: str, before: Any, after: Any, *, whole: bool = False) -> list[str]:
    """``whole``: one side is an object that appeared or went as a whole (a done_when
    added), so its empty parts (``checks: []``, ``description: ""``) say nothing."""
    if before == after:  # as diff_plans compares: 5 and 5.0 are no change
        return []
    # An object or list that appears or goes reads as its parts, when it has any.
    if _nothing(before) and isinstance(after, dict | list):
        return _lines(path, type(after)(), after, whole=True) or _whole(path, before, after)
    if _nothing(after) and isinstance(before, dict | list):
        return _lines(path, before, type(before)(), whole=True) or _whole(path, before, after)
    if isinstance(before, dict) and isinstance(after, dict):
        keys = list(before) + [key for key in after if key not in before]
        return [
            line
            for key in keys
            if not (whole and _empty(before.get(key)) and _empty(after.get(key)))
            for line in _lines(_key(path, key), before.get(key, _MISSING), after.get(key, _MISSING))
        ]
    if isinstance(before, list) and isinstance(after, list):
        if max(len(before), len(after)) <= MOST_ITEMS:
            return _list_lines(path, before, after)
    if isinstance(before, str) and isinstance(after, str):
        return [f"{path}: {_strings(before, after)}"]
    return _whole(path, before, after)


def _whole(path: str, before: Any, after: Any) -> list[str]:
    return [f"{path}: {_short(before)}{ARROW}{_short(after)}"]


def _nothing(value: Any) -> bool:
    return value is None or value is _MISSING


def _empty(value: Any) -> bool:
    return _nothing(value) or value in ("", [], {})


def _list_lines(path: str, before: list[Any], after: list[Any]) -> list[str]:
    """Items matched in order: a changed item at its index, added and removed ones as
    ``+``/``−`` lines."""
    keys_before, keys_after = [_json(item) for item in before], [_json(item) for item in after]
    lines: list[str] = []
    matcher = SequenceMatcher(None, keys_before, keys_after, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        if tag == "replace" and i2 - i1 == j2 - j1:
            for offset in range(i2 - i1):
                lines += _lines(f"{path}[{j1 + offset}]", before[i1 + offset], after[j1 + offset])
            continue
        lines += [f"{path}: − {_short(item)}" for item in before[i1:i2]]
        lines += [f"{path}: + {_short(item)}" for item in after[j1:j2]]
    return lines


def _strings(before: str, after: str) -> str:
    """Two strings, each cut around the place where they first differ."""
    if len(before) <= SIZE and len(after) <= SIZE:
        return f"{_short(before)}{ARROW}{_short(after)}"
    start = 0
    for old, new in zip(before, after, strict=False):
        if old != new:
            break
        start += 1
    cut = max(0, start - CONTEXT)
    if cut:  # begin at a word: after the first space or line break in the context
        space = next((at for at in range(cut, start) if before[at].isspace()), None)
        cut = cut if space is None else space + 1
    quoted = not (_is_plain(before) and _is_plain(after))
    return f"{_excerpt(before, cut, quoted)}{ARROW}{_excerpt(after, cut, quoted)}"


def _excerpt(text: str, cut: int, quoted: bool) -> str:
    part = text[cut:]
    shown = _json(part) if quoted else part
    shown = shown if len(shown) <= SIZE else f"{shown[: SIZE - 1]}…"
    return f"…{shown}" if cut else shown


def _key(path: str, key: Any) -> str:
    name = str(key)
    return f"{path}.{name}" if _NAME.fullmatch(name) else f"{path}[{_json(name)}]"


def _is_plain(value: Any) -> bool:
    return isinstance(value, str) and value == value.strip() and value.isprintable() and value != ""


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)
