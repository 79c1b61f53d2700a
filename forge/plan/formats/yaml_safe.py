"""Safe, bounded YAML: JSON-shaped data out, nothing else, whatever the input.

On top of PyYAML's safe constructor (libyaml's parser when available): any explicit tag
is refused, so no ``!!python/object`` and no ``!!binary`` or ``!!set`` either; aliases may
add at most ``alias_budget(limits)`` nodes, counted while composing, so a "billion
laughs" document is refused after a few dozen events instead of being walked; nesting is
refused past ``max_depth`` while composing, before Python's recursion limit; mapping keys
must be unique strings; floats must be finite; and dates stay strings, as in JSON.
"""

from __future__ import annotations

import contextlib
import math
from typing import TYPE_CHECKING, Any, Protocol

from yaml.composer import Composer
from yaml.constructor import SafeConstructor
from yaml.error import MarkedYAMLError, YAMLError
from yaml.events import AliasEvent, MappingStartEvent, SequenceStartEvent
from yaml.nodes import MappingNode, Node, ScalarNode
from yaml.parser import Parser
from yaml.reader import Reader
from yaml.resolver import Resolver
from yaml.scanner import Scanner

from forge.errors import PlanDocumentError
from forge.plan.limits import ImportLimits, too_deep

__all__ = ["alias_budget", "parse_yaml"]

_STR = "tag:yaml.org,2002:str"
_FLOAT = "tag:yaml.org,2002:float"
_MERGE = "tag:yaml.org,2002:merge"
# Resolved implicitly by YAML 1.1 but with no JSON counterpart: a bare 2024-01-01 would
# become a date (which JSON cannot hold) and a bare "=" a value SafeConstructor rejects.
_NOT_RESOLVED = {"tag:yaml.org,2002:timestamp", "tag:yaml.org,2002:value"}


def alias_budget(limits: ImportLimits) -> int:
    """How many nodes aliases may add to a document: 100 per allowed step, at least 10,000.

    Enough to share a large ``args`` object between every step of the biggest plan, and
    many orders of magnitude below what a "billion laughs" document asks for.
    """
    return max(limits.max_steps * 100, 10_000)


def parse_yaml(text: str, limits: ImportLimits) -> object:
    """Plain data from one YAML document; raises ``PlanDocumentError`` with code
    ``invalid_yaml``, ``yaml_tag``, ``yaml_aliases``, ``duplicate_key`` or
    ``document_too_deep``."""
    loader = _LOADERS[0](text, limits)
    try:
        return loader.get_single_data()
    except PlanDocumentError:
        raise
    except MarkedYAMLError as error:
        if "maximum nesting depth" in str(error.problem):
            # libyaml's own bound (1,000 levels), met while scanning ahead of the composer.
            raise too_deep(limits.max_depth) from None
        mark = error.problem_mark or error.context_mark
        problem = ", ".join(part for part in (error.context, error.problem) if part)
        message = f"invalid YAML: {problem or 'cannot be parsed'}"
        raise _error(mark, message, "invalid_yaml") from None
    except YAMLError as error:  # e.g. a character YAML does not allow
        raise PlanDocumentError(f"invalid YAML: {error}", code="invalid_yaml") from None
    except RecursionError:
        raise too_deep(limits.max_depth) from None
    except ValueError as error:  # e.g. an integer longer than Python's digit limit
        raise PlanDocumentError(f"invalid YAML: {error}", code="invalid_yaml") from None
    finally:
        loader.dispose()


class _Mark(Protocol):
    line: int
    column: int


def _error(mark: _Mark | None, message: str, code: str) -> PlanDocumentError:
    if mark is None:
        return PlanDocumentError(message, code=code)
    where = f"line {mark.line + 1}"
    return PlanDocumentError(f"{where}, column {mark.column + 1}: {message}", code=code, path=where)


class _Resolver(Resolver):
    yaml_implicit_resolvers = {
        first: [(tag, regexp) for tag, regexp in resolvers if tag not in _NOT_RESOLVED]
        for first, resolvers in Resolver.yaml_implicit_resolvers.items()
    }


class _BoundedComposer(Composer):
    """PyYAML's composer, counting nodes and nesting as it goes."""

    if TYPE_CHECKING:  # provided by the parser this is mixed with (libyaml's or PyYAML's)

        def check_event(self, *choices: Any) -> bool: ...
        def peek_event(self) -> Any: ...
        def get_event(self) -> Any: ...

    def _bound(self, limits: ImportLimits) -> None:
        self._max_depth = limits.max_depth
        self._budget = alias_budget(limits)
        self._depth = 0
        self._nodes = 0  # nodes composed so far, each alias counting as its expansion
        self._aliased = 0  # the part of _nodes that aliases added
        self._sizes: dict[str, int] = {}  # anchor -> expanded size of its node

    def compose_node(self, parent: Node | None, index: int) -> Node | None:
        if self.check_event(AliasEvent):
            return self._alias()
        event = self.peek_event()
        tag = getattr(event, "tag", None)
        if tag is not None:
            raise _error(
                event.start_mark,
                f"explicit YAML tags are not allowed ({tag!r}); plain JSON-like data only",
                "yaml_tag",
            )
        container = isinstance(event, SequenceStartEvent | MappingStartEvent)
        if container:
            self._depth += 1
            if self._depth > self._max_depth:
                raise too_deep(self._max_depth)
        before = self._nodes
        self._nodes += 1
        node = super().compose_node(parent, index)
        if container:
            self._depth -= 1
        anchor = getattr(event, "anchor", None)
        if anchor is not None:
            self._sizes[anchor] = self._nodes - before
        return node

    def _alias(self) -> Node:
        event = self.get_event()
        assert isinstance(event, AliasEvent)
        anchor = str(event.anchor)
        size = self._sizes.get(anchor)
        if size is None:
            if anchor in self.anchors:
                # Composed but without a size yet means still open: the alias sits inside
                # the node it names, which would make an infinitely deep value.
                message, code = (
                    f"alias *{anchor} refers to the node that contains it",
                    "yaml_aliases",
                )
            else:
                message, code = f"alias *{anchor} is not defined before it is used", "invalid_yaml"
            raise _error(event.start_mark, message, code)
        self._nodes += size
        self._aliased += size
        if self._aliased > self._budget:
            raise _error(
                event.start_mark,
                f"YAML aliases expand to more than {self._budget} nodes (the alias budget, "
                "100 per allowed step); refusing the document",
                "yaml_aliases",
            )
        return self.anchors[anchor]


def _finite_float(constructor: SafeConstructor, node: ScalarNode) -> float:
    value = constructor.construct_yaml_float(node)
    if not math.isfinite(value):
        raise _error(node.start_mark, f"{node.value!r} is not a finite number", "invalid_yaml")
    return value


class _Constructor(SafeConstructor):
    # JSON has no NaN or infinity, and neither does a plan.
    yaml_constructors = SafeConstructor.yaml_constructors | {_FLOAT: _finite_float}

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[str] = set()
        for key_node, _ in node.value:
            if key_node.tag == _MERGE:
                continue
            if not (isinstance(key_node, ScalarNode) and key_node.tag == _STR):
                raise _error(key_node.start_mark, "mapping keys must be strings",
                             "invalid_yaml")  # fmt: skip
            if key_node.value in seen:
                raise _error(
                    key_node.start_mark,
                    f"duplicate key {key_node.value!r}: the first value would be lost",
                    "duplicate_key",
                )
            seen.add(key_node.value)
        mapping = super().construct_mapping(node, deep)
        # Keys brought in by a merge ("<<") were not in node.value above.
        if not all(isinstance(key, str) for key in mapping):
            raise _error(node.start_mark, "mapping keys must be strings", "invalid_yaml")
        return mapping


class _Loading(Protocol):
    def get_single_data(self) -> Any: ...
    def dispose(self) -> None: ...


class _LoaderFactory(Protocol):
    def __call__(self, text: str, limits: ImportLimits) -> _Loading: ...


class _PureLoader(_BoundedComposer, Reader, Scanner, Parser, _Constructor, _Resolver):
    def __init__(self, text: str, limits: ImportLimits) -> None:
        Reader.__init__(self, text)
        Scanner.__init__(self)
        Parser.__init__(self)
        Composer.__init__(self)
        _Constructor.__init__(self)
        _Resolver.__init__(self)
        self._bound(limits)


# The first factory is used; the pure-Python one stays for PyYAML builds without libyaml
# (and for the tests, which check that both refuse the same documents).
_LOADERS: list[_LoaderFactory] = [_PureLoader]

with contextlib.suppress(ImportError):
    from yaml._yaml import CParser

    class _FastLoader(_BoundedComposer, CParser, _Constructor, _Resolver):
        """libyaml scans and parses; composing stays in Python so it can be bounded."""

        def __init__(self, text: str, limits: ImportLimits) -> None:
            CParser.__init__(self, text)
            Composer.__init__(self)
            _Constructor.__init__(self)
            _Resolver.__init__(self)
            self._bound(limits)

    _LOADERS.insert(0, _FastLoader)
