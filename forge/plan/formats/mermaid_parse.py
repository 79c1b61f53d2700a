"""Read a Mermaid ``flowchart`` (or ``graph``) into nodes, edges and comments.

This is the diagram's structure only; ``mermaid_read`` gives it plan meaning. Supported:
a ``flowchart``/``graph`` header with an optional direction (TD, TB, LR, RL, BT); node
shapes such as ``id[..]``, ``id(..)``, ``id{..}``, ``id([..])``, ``id((..))``,
``id[[..]]``, ``id[(..)]``, ``id{{..}}``, ``id>..]``, with plain or double-quoted labels
and ``:::class`` suffixes; links ``-->``, ``---``, ``-.->``, ``==>``, ``--o``, ``--x`` and
their longer forms, with ``|text|`` or ``-- text -->`` labels (kept, with each node's
shape, so that a decision's branches can be named); chains ``a --> b --> c`` and groups
``a & b --> c``; ``%%`` comments (kept) and ``%%{...}%%`` directives; statements
split by ``;``; ``subgraph``/``end`` flattened; ``classDef``, ``class``, ``style``,
``linkStyle``, ``click``, ``direction``, ``accTitle`` and ``accDescr`` lines ignored;
optional ``---`` front matter (returned as text). ``~~~`` (an invisible, layout-only
link) declares its nodes but no edge. Anything else is refused naming its line.

The import limits are applied while parsing, at the line that crosses them: a node past
``max_steps`` is refused (each node is a step), and so is work past ``node_limit``,
counting each node, each edge drawn (``a & b --> c & d`` draws four, and a name repeated
in a group only once) and each comment kept, since each becomes part of the plan.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from forge.errors import PlanDocumentError
from forge.plan.formats.mermaid_text import MERMAID_ID, unescape_label
from forge.plan.limits import DEFAULT_LIMITS, ImportLimits

__all__ = ["Flowchart", "mermaid_error", "parse_flowchart"]

_HEADER = re.compile(r"(flowchart|graph)(?:\s+(TD|TB|LR|RL|BT))?\s*", re.IGNORECASE)
# Styling and interaction statements; a keyword followed by a link is a node, not one of
# them, so that "style --> next" is not silently dropped.
_IGNORED = re.compile(
    r"(?:classDef|class|style|linkStyle|click|direction)\s+(?![-=~&.<])"
    r"|(?:accTitle|accDescr)\s*[:{]"
)
_SUBGRAPH = re.compile(r"subgraph(?:\s+(?P<rest>.*))?")
# (opening, closings), longest openings first so "([" is not read as "(".
_SHAPES = (
    ("(((", (")))",)), ("((", ("))",)), ("([", ("])",)), ("[[", ("]]",)), ("[(", (")]",)),
    ("{{", ("}}",)), ("[/", ("/]", "\\]")), ("[\\", ("\\]", "/]")), ("[", ("]",)),
    ("(", (")",)), ("{", ("}",)), (">", ("]",)),
)  # fmt: skip
# An 'o' or 'x' ends a link only when no id follows it directly ("--x B", not "--xB").
_HEAD = r"(?:>|[ox](?![A-Za-z0-9_]))"
_ARROW = rf"(?:-{{2,}}{_HEAD}|-{{3,}}|={{2,}}{_HEAD}|={{3,}}|-\.+-{_HEAD}?|~{{3,}})"
_LINK = re.compile(rf'{_ARROW}(?:\s*\|(?P<text>(?:"[^"]*"|[^|"])*)\|)?')
_TEXT_LINK = re.compile(
    rf"(?:--|==|-\.)(?![-=.>])\s*(?P<text>.*?)\s*"
    rf"(?P<arrow>-{{2,}}{_HEAD}|-{{3,}}|={{2,}}{_HEAD}|={{3,}}|\.+-{_HEAD}?)"
)
_CLASS_SUFFIX = re.compile(r":::[A-Za-z0-9_-]+")


@dataclass
class Flowchart:
    """A parsed flowchart: nodes in order of first appearance, edges without repeats."""

    direction: str = "TD"
    labels: dict[str, str | None] = field(default_factory=dict)  # node -> label, if any
    lines: dict[str, int] = field(default_factory=dict)  # node -> line it first appears on
    edges: list[tuple[str, str]] = field(default_factory=list)  # (from, to)
    # node -> the opening of the shape its label was last given in ("{": a decision)
    shapes: dict[str, str] = field(default_factory=dict)
    # (from, to) -> the text of the first link drawn between them that has one
    edge_labels: dict[tuple[str, str], str] = field(default_factory=dict)
    comments: list[tuple[int, str]] = field(default_factory=list)  # (line, text after %%)
    front_matter: str | None = None


def mermaid_error(line: int, message: str) -> PlanDocumentError:
    return PlanDocumentError(f"line {line}: {message}", code="invalid_mermaid", path=f"line {line}")


def parse_flowchart(text: str, limits: ImportLimits = DEFAULT_LIMITS) -> Flowchart:
    """Parse ``text``; raises ``PlanDocumentError`` naming the line: ``invalid_mermaid``,
    or ``too_many_steps`` and ``too_many_nodes`` at the line that crosses the limit."""
    return _Parser(text, limits).parse()


class _Parser:
    def __init__(self, text: str, limits: ImportLimits) -> None:
        # Only "\n" ends a line: str.splitlines() would also split on characters such as
        # U+2028 that may legitimately sit inside a label or a metadata comment.
        self.lines = [line.removesuffix("\r") for line in text.split("\n")]
        self.chart = Flowchart()
        self.edges: set[tuple[str, str]] = set()
        self.subgraphs: list[int] = []  # lines of the open subgraphs
        self.subgraph_ids: dict[str, int] = {}
        self.limits = limits
        self.budget = limits.node_limit  # nodes, edges drawn and comments kept, to go
        self.number = 0  # the line being read

    def parse(self) -> Flowchart:
        start = self._front_matter()
        header = False
        for number, raw in enumerate(self.lines[start:], start + 1):
            self.number = number
            line = raw.strip()
            if not line:
                continue
            if line.startswith("%%"):
                if not line.startswith("%%{"):
                    self.spend(1)
                    self.chart.comments.append((number, line[2:].strip()))
                continue
            for statement in _statements(line, number):
                if header:
                    self._statement(statement, number)
                else:
                    self._header(statement, number)
                    header = True
        if not header:
            last = max((n for n, line in enumerate(self.lines, 1) if line.strip()), default=1)
            raise mermaid_error(last, "no 'flowchart' or 'graph' header")
        if self.subgraphs:
            raise mermaid_error(self.subgraphs[-1], "subgraph is never closed with 'end'")
        return self.chart

    def _front_matter(self) -> int:
        if not self.lines or self.lines[0].strip() != "---":
            return 0
        for index in range(1, len(self.lines)):
            if self.lines[index].strip() == "---":
                self.chart.front_matter = "\n".join(self.lines[1:index])
                return index + 1
        raise mermaid_error(1, "front matter opened with '---' is never closed")

    def _header(self, statement: str, number: int) -> None:
        match = _HEADER.fullmatch(statement)
        if match is None:
            kind = statement.split()[0]
            raise mermaid_error(
                number, f"expected a 'flowchart' or 'graph' header, not {kind!r}; "
                "only flowcharts can be imported",
            )  # fmt: skip
        self.chart.direction = (match.group(2) or "TD").upper()

    def _statement(self, statement: str, number: int) -> None:
        if statement == "end":
            if not self.subgraphs:
                raise mermaid_error(number, "'end' without an open subgraph")
            self.subgraphs.pop()
        elif (match := _SUBGRAPH.fullmatch(statement)) is not None:
            self.subgraphs.append(number)
            rest = (match.group("rest") or "").strip()
            first = MERMAID_ID.match(rest)
            if first and (first.end() == len(rest) or rest[first.end() :].lstrip()[:1] == "["):
                self._subgraph_id(first.group(), number)
        elif _IGNORED.match(statement) is None:
            _Chain(self, statement, number).parse()

    def _subgraph_id(self, name: str, number: int) -> None:
        if name in self.chart.labels:
            raise mermaid_error(number, f"subgraph {name!r} has the id of a node")
        self.subgraph_ids[name] = number

    def node(self, name: str, label: str | None, number: int, shape: str = "") -> None:
        if name in self.subgraph_ids:
            raise mermaid_error(
                number, f"{name!r} is a subgraph (line {self.subgraph_ids[name]}); links to "
                "subgraphs cannot be imported",
            )  # fmt: skip
        if name not in self.chart.labels:
            if len(self.chart.labels) >= self.limits.max_steps:
                over, limit = len(self.chart.labels) + 1, self.limits.max_steps
                raise PlanDocumentError(
                    f"line {number}: the flowchart has at least {over} steps, over the "
                    f"limit of {limit} steps ({self.limits.named('max_steps')})",
                    code="too_many_steps",
                    path=f"line {number}",
                )
            self.spend(1)
            self.chart.labels[name] = label
            self.chart.lines[name] = number
        elif label is not None:
            self.chart.labels[name] = label
        if shape:
            self.chart.shapes[name] = shape

    def edge(self, source: str, target: str, text: str | None = None) -> None:
        if (source, target) not in self.edges:
            self.edges.add((source, target))
            self.chart.edges.append((source, target))
        if text and (source, target) not in self.chart.edge_labels:
            self.chart.edge_labels[(source, target)] = text

    def spend(self, nodes: int) -> None:
        """Count ``nodes`` (nodes, edges or comments) against the node limit."""
        self.budget -= nodes
        if self.budget < 0:
            limit, where = self.limits.node_limit, f"line {self.number}"
            raise PlanDocumentError(
                f"{where}: the flowchart's nodes, links and comments come to more than "
                f"{limit}, over the limit of {limit} ({self.limits.named('max_nodes')})",
                code="too_many_nodes",
                path=where,
            )


class _Chain:
    """One statement of nodes and links: ``a & b --> c -->|label| d[Label]``."""

    def __init__(self, parser: _Parser, text: str, number: int) -> None:
        self.parser, self.text, self.number, self.pos = parser, text, number, 0

    def parse(self) -> None:
        group = self._group()
        while self._skip_spaces() < len(self.text):
            visible, text = self._link()
            following = self._group()
            if visible:
                # Paid for before drawing (repeats too: drawing them is work all the same),
                # so groups that multiply past the limit cost only their reading.
                self.parser.spend(len(group) * len(following))
                for target in following:
                    for source in group:
                        self.parser.edge(source, target, text)
            group = following

    def _fail(self, message: str) -> PlanDocumentError:
        return mermaid_error(self.number, f"{message} at column {self.pos + 1}: {self.text!r}")

    def _skip_spaces(self) -> int:
        while self.pos < len(self.text) and self.text[self.pos].isspace():
            self.pos += 1
        return self.pos

    def _group(self) -> list[str]:
        names = [self._node()]
        while self._skip_spaces() < len(self.text) and self.text[self.pos] == "&":
            self.pos += 1
            self._skip_spaces()
            names.append(self._node())
        # Once each: "a & a & a --> b & b" must not cost the square of its length.
        return list(dict.fromkeys(names))

    def _node(self) -> str:
        match = MERMAID_ID.match(self.text, self.pos)
        if match is None:
            raise self._fail("expected a node id (letters, digits, '_', '.', '-')")
        name = match.group()
        self.pos = match.end()
        shape, label = self._label()
        suffix = _CLASS_SUFFIX.match(self.text, self.pos)
        if suffix is not None:
            self.pos = suffix.end()
        self.parser.node(name, label, self.number, shape)
        return name

    def _label(self) -> tuple[str, str | None]:
        """The opening of the node's shape (``""`` for a bare id) and its label."""
        for opening, closings in _SHAPES:
            if self.text.startswith(opening, self.pos):
                self.pos += len(opening)
                return opening, self._label_text(closings)
        return "", None

    def _label_text(self, closings: tuple[str, ...]) -> str:
        self._skip_spaces()
        if self.text.startswith('"', self.pos):
            end = self.text.find('"', self.pos + 1)
            if end < 0:
                raise self._fail("quoted label is never closed")
            label = self.text[self.pos + 1 : end]
            if len(label) >= 2 and label[0] == label[-1] == "`":  # a markdown string
                label = label[1:-1]
            self.pos = end + 1
            self._skip_spaces()
            closing = next((c for c in closings if self.text.startswith(c, self.pos)), None)
            if closing is None:
                raise self._fail(f"expected {closings[0]!r} after the quoted label")
            self.pos += len(closing)
            return unescape_label(label)
        ends = [(index, c) for c in closings if (index := self.text.find(c, self.pos)) >= 0]
        if not ends:
            raise self._fail(f"label is never closed with {closings[0]!r}")
        index, closing = min(ends)
        label = self.text[self.pos : index].strip()
        self.pos = index + len(closing)
        return unescape_label(label)

    def _link(self) -> tuple[bool, str | None]:
        """Consume one link: whether it declares an edge (``~~~`` does not), and its text
        (``-->|yes|``, ``-- yes -->``), if any."""
        if self.text.startswith("<", self.pos):
            raise self._fail("two-way links have no dependency direction")
        match = _LINK.match(self.text, self.pos) or _TEXT_LINK.match(self.text, self.pos)
        if match is None:
            raise self._fail("expected a link such as '-->'")
        self.pos = match.end()
        self._skip_spaces()
        return not match.group().startswith("~"), _link_text(match.group("text"))


def _statements(line: str, number: int) -> list[str]:
    """``line`` split at the semicolons that are outside double quotes."""
    parts: list[str] = []
    start, quoted = 0, False
    for index, char in enumerate(line):
        if char == '"':
            quoted = not quoted
        elif char == ";" and not quoted:
            parts.append(line[start:index])
            start = index + 1
    if quoted:
        raise mermaid_error(number, f"a double quote is never closed: {line!r}")
    parts.append(line[start:])
    return [part.strip() for part in parts if part.strip()]


def _link_text(text: str | None) -> str | None:
    """A link's text as a person reads it: trimmed, unquoted, entities decoded."""
    if text is None:
        return None
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] == '"':
        text = text[1:-1].strip()
    return unescape_label(text) or None
