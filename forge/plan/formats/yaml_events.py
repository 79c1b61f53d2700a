"""The first pass over a YAML document: its events checked against the import limits.

Composing a YAML document builds a node object per value and constructing it a Python
object per node, some 15 µs per value on a slow machine: a 4 MiB list of two million
one-character items took half a minute and 800 MB before anything else could refuse it.
Parsing events alone costs a few µs per value and keeps nothing, so ``check_events``
walks them first and refuses at the first event over a limit: an explicit tag, nesting
deeper than ``max_depth``, a step of the plan's ``steps`` past ``max_steps``, more than
``node_limit`` nodes (an alias counting as the nodes it repeats), or aliases adding more
than ``alias_budget``. Only a document that passes
is composed, so composing is bounded by the same numbers.
"""

from __future__ import annotations

from typing import Any, Protocol

from yaml.events import (
    AliasEvent,
    DocumentStartEvent,
    MappingEndEvent,
    MappingStartEvent,
    ScalarEvent,
    SequenceEndEvent,
    SequenceStartEvent,
    StreamEndEvent,
)

from forge.errors import PlanDocumentError
from forge.plan.limits import ImportLimits, too_deep

__all__ = ["ALIAS_NODES_PER_STEP", "alias_budget", "check_events", "marked_error"]

# Below the node limit's 50 per step on purpose, so that a "billion laughs" document is
# refused as what it is (yaml_aliases) before it fills the node limit.
ALIAS_NODES_PER_STEP = 20


class _Mark(Protocol):
    line: int
    column: int


class _Events(Protocol):
    def get_event(self) -> Any: ...


def alias_budget(limits: ImportLimits) -> int:
    """How many nodes aliases may add to a document: 20 per allowed step, at least 10,000.

    Enough to share an ``args`` object of 20 nodes between every step of the biggest
    plan, and many orders of magnitude below what a "billion laughs" document asks for.
    """
    return max(limits.max_steps * ALIAS_NODES_PER_STEP, 10_000)


def marked_error(mark: _Mark | None, message: str, code: str) -> PlanDocumentError:
    """A ``PlanDocumentError`` whose message starts with, and whose path is, the place."""
    if mark is None:
        return PlanDocumentError(message, code=code)
    line = f"line {mark.line + 1}"
    return PlanDocumentError(f"{line}, column {mark.column + 1}: {message}", code=code, path=line)


def check_events(parser: _Events, limits: ImportLimits) -> None:
    """Read every event of ``parser``, raising ``PlanDocumentError`` at the first one over
    a limit (codes ``yaml_tag``, ``document_too_deep``, ``too_many_steps``,
    ``too_many_nodes``, ``yaml_aliases``, ``invalid_yaml``). YAML syntax errors propagate
    as PyYAML raises them."""
    node_limit, aliases_allowed = limits.node_limit, alias_budget(limits)
    max_depth = limits.max_depth
    nodes = 0  # so far, each alias counting as the nodes it repeats
    aliased = 0  # the part of nodes that aliases added
    open_: list[tuple[str | None, int]] = []  # collections not closed yet: anchor, nodes before
    sizes: dict[str, int] = {}  # anchor -> nodes in the value it names
    documents = 0
    # The plan's steps are counted as they start, so that a plan of more steps than allowed
    # is refused for that at the first step over, before its nodes pass the node limit
    # (which they do only later, for ordinary steps: ImportLimits).
    root_is_mapping = False
    root_children = 0  # of the root mapping: its keys and values, alternately
    steps_key = False  # the root's last key was "steps"
    in_steps = False  # open_[1] is the root's "steps" sequence
    steps = 0
    get_event = parser.get_event
    while True:
        event = get_event()
        kind = type(event)
        if kind is ScalarEvent or kind is SequenceStartEvent or kind is MappingStartEvent:
            if event.tag is not None:
                raise marked_error(
                    event.start_mark,
                    f"explicit YAML tags are not allowed ({event.tag!r}); "
                    "plain JSON-like data only",
                    "yaml_tag",
                )
            level = len(open_)
            if level == 2:
                if in_steps:
                    steps = _one_step_more(event, steps, limits)
            elif level == 1:
                if root_is_mapping:
                    if root_children % 2 == 0:  # a key
                        steps_key = kind is ScalarEvent and event.value == "steps"
                        in_steps = False
                    else:
                        in_steps = steps_key and kind is SequenceStartEvent
                    root_children += 1
            elif level == 0:
                root_is_mapping = kind is MappingStartEvent
            nodes += 1
            if nodes > node_limit:
                raise _too_many_nodes(event, limits)
            anchor = event.anchor
            if anchor is not None and (anchor in sizes or any(a == anchor for a, _ in open_)):
                raise marked_error(
                    event.start_mark, f"anchor &{anchor} is defined twice", "invalid_yaml"
                )
            if kind is ScalarEvent:
                if anchor is not None:
                    sizes[anchor] = 1
            else:
                if len(open_) >= max_depth:
                    raise too_deep(max_depth)
                open_.append((anchor, nodes - 1))
        elif kind is SequenceEndEvent or kind is MappingEndEvent:
            anchor, before = open_.pop()
            if anchor is not None:
                sizes[anchor] = nodes - before
        elif kind is AliasEvent:
            size = sizes.get(event.anchor)
            if size is None:
                raise _bad_alias(event, open_)
            level = len(open_)
            if level == 2:
                if in_steps:
                    steps = _one_step_more(event, steps, limits)
            elif level == 1 and root_is_mapping:  # neither "steps" nor its list as it opens
                root_children += 1
                steps_key = in_steps = False
            nodes += size
            aliased += size
            if aliased > aliases_allowed:
                raise marked_error(
                    event.start_mark,
                    f"YAML aliases expand to more than {aliases_allowed} nodes (the alias "
                    f"budget, {ALIAS_NODES_PER_STEP} per allowed step); refusing the document",
                    "yaml_aliases",
                )
            if nodes > node_limit:
                raise _too_many_nodes(event, limits)
        elif kind is DocumentStartEvent:
            documents += 1
            if documents > 1:
                raise marked_error(
                    event.start_mark,
                    "invalid YAML: expected a single document in the stream, "
                    "but found another document",
                    "invalid_yaml",
                )
        elif kind is StreamEndEvent or event is None:
            return


def _one_step_more(event: Any, steps: int, limits: ImportLimits) -> int:
    """``steps`` and the one ``event`` starts, refused at the first over ``max_steps``."""
    try:
        limits.check_step_count(steps + 1, at_least=True)
    except PlanDocumentError as error:
        raise marked_error(event.start_mark, error.message, error.code) from None
    return steps + 1


def _too_many_nodes(event: Any, limits: ImportLimits) -> PlanDocumentError:
    error = limits.too_many_nodes()
    return marked_error(event.start_mark, error.message, error.code)


def _bad_alias(event: Any, open_: list[tuple[str | None, int]]) -> PlanDocumentError:
    anchor = event.anchor
    if any(a == anchor for a, _ in open_):
        # The alias sits inside the node it names, which would make an infinitely deep value.
        return marked_error(
            event.start_mark, f"alias *{anchor} refers to the node that contains it", "yaml_aliases"
        )
    return marked_error(
        event.start_mark, f"alias *{anchor} is not defined before it is used", "invalid_yaml"
    )
