"""Spelling text inside Mermaid: node labels, node ids and the JSON of metadata comments.

Labels use Mermaid's own entity codes (``#quot;``, ``#lt;``, ``#35;``), and ``#`` itself is
always written as ``#35;``, so every ``#...;`` in an exported label is an entity and
``unescape_label(escape_label(text)) == text`` for any text. Newlines become ``<br>``,
which Mermaid draws as a line break and which cannot come from a description because its
``<`` would have been escaped.
"""

from __future__ import annotations

import json
import re

__all__ = ["comment_json", "escape_label", "is_mermaid_id", "unescape_label"]

_NAMED = {'"': "quot", "<": "lt", ">": "gt", "&": "amp"}
_BY_NAME = {name: char for char, name in _NAMED.items()} | {"apos": "'", "nbsp": "\xa0"}
_ENTITY = re.compile(r"<br\s*/?>|#(\d{1,7});|#([A-Za-z]+);", re.IGNORECASE)

# What Mermaid reads as a node id when written with spaces around arrows: words joined by
# single '.' or '-' (a '-' before '-', '.' or '>' would start an arrow).
MERMAID_ID = re.compile(r"[A-Za-z0-9_]+(?:[.-][A-Za-z0-9_]+)*")
# Words Mermaid's lexer takes for keywords wherever they appear as a node id.
_RESERVED = {
    "end", "graph", "flowchart", "subgraph", "direction", "class", "classdef", "style",
    "linkstyle", "click", "call", "href", "default", "interpolate", "acctitle", "accdescr",
}  # fmt: skip


def escape_label(text: str) -> str:
    """``text`` for a double-quoted Mermaid label."""
    out: list[str] = []
    for char in text:
        if char == "\n":
            out.append("<br>")
        elif char in _NAMED:
            out.append(f"#{_NAMED[char]};")
        elif char in "#`" or not char.isprintable():
            # '#' so that entities stay unambiguous; '`' opens Mermaid's markdown strings;
            # unprintable characters (tabs, line separators, ...) could break the line.
            out.append(f"#{ord(char)};")
        else:
            out.append(char)
    return "".join(out)


def unescape_label(text: str) -> str:
    """The text a Mermaid label stands for: entities decoded, ``<br>`` as a newline."""

    def replace(match: re.Match[str]) -> str:
        number, name = match.groups()
        if number is not None:
            code = int(number)
            return chr(code) if code <= 0x10FFFF else match.group()
        if name is not None:
            return _BY_NAME.get(name.lower(), match.group())
        return "\n"

    return _ENTITY.sub(replace, text)


def is_mermaid_id(node_id: str) -> bool:
    """Whether ``node_id`` can be written as it is as a Mermaid node id."""
    return MERMAID_ID.fullmatch(node_id) is not None and node_id.lower() not in _RESERVED


def comment_json(value: object) -> str:
    """``value`` as one line of JSON that is safe inside a ``%%`` comment.

    Readable UTF-8 is kept, but any unprintable character (only possible inside a JSON
    string, where ``\\uXXXX`` means the same) is escaped so no line separator of any kind
    can end the comment early.
    """
    text = json.dumps(value, ensure_ascii=False, separators=(", ", ": "))
    return "".join(char if char.isprintable() else json.dumps(char)[1:-1] for char in text)
