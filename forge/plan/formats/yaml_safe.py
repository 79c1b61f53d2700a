"""Safe, bounded YAML: JSON-shaped data out, nothing else, whatever the input.

Two passes over the text. The first (``yaml_events.check_events``) reads only the parser's
events and refuses, at the first event over a limit, any explicit tag (so no
``!!python/object``, and no ``!!binary`` or ``!!set`` either), nesting past ``max_depth``,
more than ``node_limit`` nodes, and aliases expanding past the alias budget (a "billion
laughs" document is refused after a few dozen events instead of being walked). Only then
is the document composed and constructed, by PyYAML's safe constructor (composed by
libyaml when available), so that work is bounded by the same numbers. Mapping keys must
be unique strings; floats must be finite; and dates stay strings, as in JSON.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator
from typing import Any, Protocol

from yaml.composer import Composer
from yaml.constructor import SafeConstructor
from yaml.error import MarkedYAMLError, YAMLError
from yaml.nodes import MappingNode, ScalarNode
from yaml.parser import Parser
from yaml.reader import Reader
from yaml.resolver import Resolver
from yaml.scanner import Scanner

from forge.errors import PlanDocumentError
from forge.plan.formats.source import EMPTY
from forge.plan.formats.yaml_events import alias_budget, check_events, marked_error
from forge.plan.limits import ImportLimits, too_deep

__all__ = ["alias_budget", "parse_yaml"]

_STR = "tag:yaml.org,2002:str"
_FLOAT = "tag:yaml.org,2002:float"
_MERGE = "tag:yaml.org,2002:merge"
# Resolved implicitly by YAML 1.1 but with no JSON counterpart: a bare 2024-01-01 would
# become a date (which JSON cannot hold) and a bare "=" a value SafeConstructor rejects.
_NOT_RESOLVED = {"tag:yaml.org,2002:timestamp", "tag:yaml.org,2002:value"}


def parse_yaml(text: str, limits: ImportLimits) -> object:
    """Plain data from one YAML document; raises ``PlanDocumentError`` with code
    ``invalid_yaml``, ``yaml_tag``, ``yaml_aliases``, ``duplicate_key``,
    ``document_too_deep`` or ``too_many_nodes``."""
    try:
        with _loader(text) as events:
            check_events(events, limits)
        with _loader(text) as loader:
            node = loader.get_single_node()
            if node is None:  # nothing but spaces and comments: no document at all
                raise PlanDocumentError(EMPTY, code="invalid_document")
            return loader.construct_document(node)
    except PlanDocumentError:
        raise
    except MarkedYAMLError as error:
        if "maximum nesting depth" in str(error.problem):
            # libyaml's own bound (1,000 levels), met while scanning ahead of the events.
            raise too_deep(limits.max_depth) from None
        mark = error.problem_mark or error.context_mark
        problem = ", ".join(part for part in (error.context, error.problem) if part)
        message = f"invalid YAML: {problem or 'cannot be parsed'}"
        raise marked_error(mark, message, "invalid_yaml") from None
    except YAMLError as error:  # e.g. a character YAML does not allow
        raise PlanDocumentError(f"invalid YAML: {error}", code="invalid_yaml") from None
    except RecursionError:
        raise too_deep(limits.max_depth) from None
    except ValueError as error:  # e.g. an integer longer than Python's digit limit
        raise PlanDocumentError(f"invalid YAML: {error}", code="invalid_yaml") from None


class _Resolver(Resolver):
    yaml_implicit_resolvers = {
        first: [(tag, regexp) for tag, regexp in resolvers if tag not in _NOT_RESOLVED]
        for first, resolvers in Resolver.yaml_implicit_resolvers.items()
    }


def _finite_float(constructor: SafeConstructor, node: ScalarNode) -> float:
    value = constructor.construct_yaml_float(node)
    if not math.isfinite(value):
        message = f"{node.value!r} is not a finite number"
        raise marked_error(node.start_mark, message, "invalid_yaml")
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
                raise marked_error(key_node.start_mark, "mapping keys must be strings",
                             "invalid_yaml")  # fmt: skip
            if key_node.value in seen:
                raise marked_error(
                    key_node.start_mark,
                    f"duplicate key {key_node.value!r}: the first value would be lost",
                    "duplicate_key",
                )
            seen.add(key_node.value)
        mapping = super().construct_mapping(node, deep)
        # Keys brought in by a merge ("<<") were not in node.value above.
        if not all(isinstance(key, str) for key in mapping):
            raise marked_error(node.start_mark, "mapping keys must be strings", "invalid_yaml")
        return mapping


class _Loading(Protocol):
    def get_event(self) -> Any: ...
    def get_single_node(self) -> Any: ...
    def construct_document(self, node: Any) -> Any: ...
    def dispose(self) -> None: ...


@contextlib.contextmanager
def _loader(text: str) -> Iterator[_Loading]:
    loader = _LOADERS[0](text)
    try:
        yield loader
    finally:
        loader.dispose()


class _LoaderFactory(Protocol):
    def __call__(self, text: str) -> _Loading: ...


class _PureLoader(Reader, Scanner, Parser, Composer, _Constructor, _Resolver):
    def __init__(self, text: str) -> None:
        Reader.__init__(self, text)
        Scanner.__init__(self)
        Parser.__init__(self)
        Composer.__init__(self)
        _Constructor.__init__(self)
        _Resolver.__init__(self)


# The first factory is used; the pure-Python one stays for PyYAML builds without libyaml
# (and for the tests, which check that both refuse the same documents).
_LOADERS: list[_LoaderFactory] = [_PureLoader]

with contextlib.suppress(ImportError):
    from yaml._yaml import CParser

    class _FastLoader(CParser, _Constructor, _Resolver):
        """libyaml parses and composes (in C); constructing stays PyYAML's, in Python."""

        def __init__(self, text: str) -> None:
            CParser.__init__(self, text)
            _Constructor.__init__(self)
            _Resolver.__init__(self)

    _LOADERS.insert(0, _FastLoader)
